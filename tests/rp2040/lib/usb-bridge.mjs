// The firmware's USB CDC ACM, bridged to a unix socket server (one client).
//
// Enumeration is rp2040js's own host-side USBCDC helper (it needs the
// device's max_packet_size_0 at 64: it expects the 9-byte configuration
// descriptor in one packet). One quirk is worked around here: the helper
// completes an armed OUT buffer at once with 0 bytes when it has nothing to
// send; this bridge holds the armed OUT buffer until the client's bytes are
// there, and then completes it with up to the buffer's size.

import { OneClientSocket } from './socket-server.mjs';
import { USBCDC } from 'rp2040js';

export class UsbBridge {
  constructor(emulator, socketPath, { log = () => {}, onClientClosed = () => {} } = {}) {
    this.emulator = emulator;
    this.log = log;
    const usb = emulator.mcu.usbCtrl;
    this.usb = usb;
    this.cdc = new USBCDC(usb);
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
