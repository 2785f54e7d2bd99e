// The firmware's USB CDC ACM, bridged to a unix socket server (one client).
//
// Enumeration is rp2040js's own host-side USBCDC helper (it needs the
// device's max_packet_size_0 at 64: it expects the 9-byte configuration
// descriptor in one packet). One quirk is worked around here: the helper
// completes an armed OUT buffer at once with 0 bytes when it has nothing to
// send; this bridge holds the armed OUT buffer until the client's bytes are
// there, and then completes it with up to the buffer's size.
//
// The host's behaviours (run.mjs --usb-no-dtr, --usb-stop-reading-after N,
// --usb-close-after N). After enumeration the host asserts DTR (and RTS) by
// SET_CONTROL_LINE_STATE to the CDC communication interface, as Linux's
// cdc_acm does when a program opens the port (rp2040js's helper sends it
// to the device recipient, which usbd-serial ignores: DTR stayed low).
// --usb-no-dtr: never. A host that stops reading leaves the device's IN
// buffer armed (AVAILABLE and FULL, never completed): the host no longer
// polls the endpoint, the device's write returns WouldBlock once its buffer
// is full. --usb-close-after N: after N bytes the host also drops DTR and
// RTS, as closing the port does (HUPCL). The bytes counted are those of the
// IN packets the host took: it stops after the packet that reaches N.
//
// The serial number: once the port is open (after the SET_CONTROL_LINE_STATE's
// status stage, or at once with --usb-no-dtr) the host reads the device
// descriptor and its iSerialNumber string (USB 2.0 9.6.1, 9.6.7; language
// 0x0409), as Linux does for /dev/serial/by-id, and logs it as
// `usb serial number: …` (`serialNumber`; null until read, '' if none).

import { OneClientSocket } from './socket-server.mjs';
import { createSetupPacket, DataDirection, DescriptorType, SetupRecipient, SetupType, USBCDC } from 'rp2040js';

const CDC_SET_CONTROL_LINE_STATE = 0x22;
const CDC_DTR = 1 << 0;
const CDC_RTS = 1 << 1;
const CDC_CLASS = 0x02;
const CDC_ACM_SUBCLASS = 0x02;
// USB DPRAM buffer control (datasheet 4.1.2.5): EP0 IN at 0x80, EPn IN at 0x80 + 8n, OUT at + 4.
const EP0_IN_BUFFER_CONTROL = 0x80;
const EP15_OUT_BUFFER_CONTROL = 0xfc;
const BUF_AVAILABLE = 1 << 10;
const BUF_LEN_MASK = 0x3ff;
const GET_DESCRIPTOR = 6;
const DEVICE_DESCRIPTOR = 1;
const STRING_DESCRIPTOR = 3;
const LANGID_EN_US = 0x0409;

/** SET_CONTROL_LINE_STATE (CDC PSTN 6.3.12): class request to the communication interface. */
export function controlLineStatePacket(lines, interfaceNumber) {
  return new Uint8Array([0x21, CDC_SET_CONTROL_LINE_STATE, lines & 0xff, 0, interfaceNumber & 0xff, 0, 0, 0]);
}

/** The CDC ACM communication interface's number in a configuration descriptor set (0 if none). */
export function commInterface(descriptors) {
  for (let i = 0; i + 1 < descriptors.length && descriptors[i] >= 2; i += descriptors[i]) {
    const d = descriptors;
    if (d[i + 1] === DescriptorType.Interface && d[i] === 9 && d[i + 5] === CDC_CLASS && d[i + 6] === CDC_ACM_SUBCLASS) {
      return d[i + 2];
    }
  }
  return 0;
}

export class UsbBridge {
  /**
   * @param {object} options
   * @param {boolean} [options.dtr] assert DTR after enumeration (default true)
   * @param {number|null} [options.stopReadingAfter] stop taking IN data after this many bytes
   * @param {number|null} [options.closeAfter] after this many bytes drop DTR and stop reading
   */
  constructor(
    emulator,
    socketPath,
    { log = () => {}, onClientClosed = () => {}, dtr = true, stopReadingAfter = null, closeAfter = null } = {},
  ) {
    this.emulator = emulator;
    this.log = log;
    const usb = emulator.mcu.usbCtrl;
    this.usb = usb;
    this.cdc = new USBCDC(usb);
    this.dtr = dtr;
    this.stopReadingAfter = stopReadingAfter;
    this.closeAfter = closeAfter;
    /** Bytes of the IN packets the host took; the host reads while `reading`. */
    this.bytesTaken = 0;
    this.reading = true;
    this.heldIn = 0;
    this.lineStates = [];
    this.cdc.cdcSetControlLineState = () => this.portOpened();
    /** The device's iSerialNumber string once read; `serialStep` handles EP0's IN data meanwhile. */
    this.serialNumber = null;
    this.serialStep = null;
    const helperWrite = usb.onEndpointWrite;
    usb.onEndpointWrite = (endpoint, buffer) => {
      if (endpoint === 0 && this.serialStep !== null) this.serialStep(buffer);
      else helperWrite(endpoint, buffer);
    };
    this.watchInArms();
    this.toDevice = [];
    this.toDeviceBytes = 0;
    this.pendingReads = new Map();
    this.configured = false;
    this.bytesIn = 0;
    this.bytesOut = 0;
    this.cdc.onDeviceConnected = () => {
      this.configured = true;
      this.serve();
      log(`USB CDC configured at ${(emulator.nowNs / 1e6).toFixed(3)} ms simulated`);
    };
    this.cdc.onSerialData = (buffer) => {
      this.trace?.(`IN ${buffer.length} B at ${emulator.nowNs} ns`);
      this.bytesOut += buffer.length;
      this.socket.send(Buffer.from(buffer));
    };
    const helperRead = usb.onEndpointRead;
    const trace = process.env.RP2040_HARNESS_TRACE ? log : null;
    this.trace = trace;
    usb.onEndpointRead = (endpoint, size) => {
      trace?.(`OUT ep${endpoint} armed (${size} B) at ${emulator.nowNs} ns, ${this.toDeviceBytes} B waiting`);
      // The device may arm its data OUT endpoint before the helper has read the descriptors
      // (outEndpoint is still -1 then): any non-zero OUT endpoint's arm is kept until served.
      if (endpoint > 0) {
        this.pendingReads.set(endpoint, size);
        this.serve();
      } else {
        helperRead(endpoint, size);
      }
    };
    this.socket = new OneClientSocket(socketPath, {
      onData: (data) => {
        this.trace?.(`client sent ${data.length} B at ${this.emulator.nowNs} ns`);
        this.bytesIn += data.length;
        this.toDevice.push(data);
        this.toDeviceBytes += data.length;
        this.serve();
      },
      onClientClosed,
    });
    this.listening = this.socket.listening;
  }

  /** The port opened on the host after enumeration: DTR and RTS up, unless --usb-no-dtr. */
  portOpened() {
    this.cdc.initialized = true;
    if (this.dtr) {
      this.setControlLines(CDC_DTR | CDC_RTS);
      // The request's status stage (a zero-length IN on EP0), then the serial number.
      this.serialStep = (buffer) => {
        if (buffer.length === 0) this.askDescriptor(DEVICE_DESCRIPTOR, 0, 0, 18);
      };
    } else {
      this.askDescriptor(DEVICE_DESCRIPTOR, 0, 0, 18);
    }
  }

  /** GET_DESCRIPTOR (USB 2.0 9.4.3); its IN data goes to `gotDescriptor`. */
  askDescriptor(type, index, langId, length) {
    this.serialStep = (buffer) => this.gotDescriptor(type, buffer);
    this.usb.sendSetupPacket(
      createSetupPacket({
        dataDirection: DataDirection.DeviceToHost,
        type: SetupType.Standard,
        recipient: SetupRecipient.Device,
        bRequest: GET_DESCRIPTOR,
        wValue: (type << 8) | index,
        wIndex: langId,
        wLength: length,
      }),
    );
  }

  gotDescriptor(type, buffer) {
    if (buffer.length < 2 || buffer[1] !== type) return;
    if (type === DEVICE_DESCRIPTOR) {
      const iSerial = buffer.length >= 17 ? buffer[16] : 0;
      if (iSerial !== 0) {
        this.askDescriptor(STRING_DESCRIPTOR, iSerial, LANGID_EN_US, 255);
        return;
      }
      this.serialNumber = '';
    } else {
      const units = [];
      for (let i = 2; i + 1 < Math.min(buffer[0], buffer.length); i += 2) units.push(buffer[i] | (buffer[i + 1] << 8));
      this.serialNumber = String.fromCharCode(...units);
    }
    this.serialStep = null;
    this.log(`usb serial number: ${this.serialNumber === '' ? '(none: iSerialNumber 0)' : this.serialNumber}`);
  }

  setControlLines(lines) {
    this.lineStates.push({ lines, ns: this.emulator.nowNs });
    this.trace?.(`SET_CONTROL_LINE_STATE ${lines} at ${this.emulator.nowNs} ns`);
    this.usb.sendSetupPacket(controlLineStatePacket(lines, commInterface(this.cdc.descriptors)));
  }

  /**
   * rp2040js completes an armed IN buffer at once (and hands its bytes to the
   * helper 10 µs later). While the host reads, each IN packet of the CDC
   * data endpoint is counted; once the host has stopped, the buffer is left
   * armed, as a host that no longer polls leaves it.
   */
  watchInArms() {
    const { usb } = this;
    const updated = usb.DPRAMUpdated.bind(usb);
    usb.DPRAMUpdated = (offset, value) => {
      if (value & BUF_AVAILABLE && offset >= EP0_IN_BUFFER_CONTROL && offset <= EP15_OUT_BUFFER_CONTROL && !(offset & 4)) {
        const endpoint = (offset - EP0_IN_BUFFER_CONTROL) >> 3;
        if (endpoint === this.cdc.inEndpoint && endpoint > 0 && !usb.hostMode) {
          if (!this.reading) {
            this.heldIn++;
            return;
          }
          this.bytesTaken += value & BUF_LEN_MASK;
          if (value & (BUF_AVAILABLE << 16)) this.bytesTaken += (value >>> 16) & BUF_LEN_MASK;
          this.checkHostLimits();
        }
      }
      updated(offset, value);
    };
  }

  checkHostLimits() {
    const taken = this.bytesTaken;
    if (this.stopReadingAfter !== null && taken >= this.stopReadingAfter && this.reading) {
      this.reading = false;
      this.log(`USB host: stopped reading after ${taken} B (--usb-stop-reading-after ${this.stopReadingAfter})`);
    }
    if (this.closeAfter !== null && taken >= this.closeAfter && this.reading) {
      this.reading = false;
      this.log(`USB host: closed the port (DTR dropped) after ${taken} B (--usb-close-after ${this.closeAfter})`);
      // After this bus write, as the host's own request.
      this.emulator.at(this.emulator.nowNs, () => this.setControlLines(0));
    }
  }

  /** Completes the held OUT buffer of the CDC data endpoint if bytes wait. */
  serve() {
    const endpoint = this.cdc.outEndpoint;
    if (!this.toDeviceBytes || endpoint <= 0 || !this.pendingReads.has(endpoint)) return;
    const size = this.pendingReads.get(endpoint);
    this.pendingReads.delete(endpoint);
    const out = new Uint8Array(Math.min(size, this.toDeviceBytes));
    let filled = 0;
    while (filled < out.length) {
      const head = this.toDevice[0];
      const take = Math.min(head.length, out.length - filled);
      out.set(head.subarray(0, take), filled);
      filled += take;
      if (take === head.length) this.toDevice.shift();
      else this.toDevice[0] = head.subarray(take);
    }
    this.toDeviceBytes -= out.length;
    this.trace?.(`OUT ep${endpoint} completed with ${out.length} B at ${this.emulator.nowNs} ns`);
    this.emulator.syncClock();
    this.usb.endpointReadDone(endpoint, out);
  }

  close() {
    this.socket.close();
  }
}
