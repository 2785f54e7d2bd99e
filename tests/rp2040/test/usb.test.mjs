// The USB host's behaviours (lib/usb-bridge.mjs): DTR asserted after
// enumeration by SET_CONTROL_LINE_STATE to the CDC communication interface
// (rp2040js's helper addressed it to the device, which usbd-serial
// ignores), --usb-no-dtr, --usb-stop-reading-after N and --usb-close-after N.
// A CDC ACM device is played from JS through the USB controller's registers
// and DPRAM, as firmware drives them (datasheet 4.1).

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { UsbBridge } from '../lib/usb-bridge.mjs';
import * as H from './helpers.mjs';

const DPRAM = 0x50100000;
const USB = 0x50110000;
const MAIN_CTRL = USB + 0x40;
const SIE_STATUS = USB + 0x50;
const SIE_SETUP_REC = 1 << 17;
const SIE_BUS_RESET = 1 << 19;
const EP0_IN_BUF_CTRL = DPRAM + 0x80;
const EP1_IN_CTRL = DPRAM + 0x08;
const EP1_IN_BUF_CTRL = DPRAM + 0x88;
const EP1_IN_BUFFER = 0x180;
const AVAILABLE = 1 << 10;
const FULL = 1 << 15;

/** Data interface 0 (bulk IN 1, OUT 2), then the CDC ACM communication interface 1. */
const CONFIGURATION = [
  [9, 2, 41, 0, 2, 1, 0, 0x80, 50],
  [9, 4, 0, 0, 2, 10, 0, 0, 0],
  [7, 5, 0x81, 2, 64, 0, 0],
  [7, 5, 0x02, 2, 64, 0, 0],
  [9, 4, 1, 0, 0, 2, 2, 1, 0],
].flat();
/** The device descriptor: iSerialNumber (byte 16) is string 3. */
const DEVICE = [18, 1, 0x00, 0x02, 2, 0, 0, 64, 0xc0, 0x16, 0xdd, 0x27, 0, 1, 1, 2, 3, 1];
const SERIAL = 'E6614C311B2A3D21';
const SERIAL_STRING = [2 + 2 * SERIAL.length, 3, ...[...SERIAL].flatMap((c) => [c.charCodeAt(0), 0])];

class FakeCdcDevice {
  constructor(em) {
    this.em = em;
    this.setups = [];
    em.write32(EP1_IN_CTRL, (1 << 31) | EP1_IN_BUFFER);
    em.write32(MAIN_CTRL, 1);
  }
  write(offset, bytes) {
    for (let i = 0; i < bytes.length; i += 4) {
      const word = (bytes[i] ?? 0) | ((bytes[i + 1] ?? 0) << 8) | ((bytes[i + 2] ?? 0) << 16) | ((bytes[i + 3] ?? 0) << 24);
      this.em.write32(DPRAM + offset + i, word);
    }
  }
  ep0In(bytes) {
    this.write(0x100, bytes);
    this.em.write32(EP0_IN_BUF_CTRL, AVAILABLE | FULL | bytes.length);
  }
  /** Runs `us` µs of simulated time, answering the control requests as they come. */
  run(us) {
    const end = this.em.nowNs + us * 1000;
    while (this.em.nowNs < end) {
      this.em.runCycles(250);
      const status = this.em.read32(SIE_STATUS);
      if (status & SIE_BUS_RESET) this.em.write32(SIE_STATUS, SIE_BUS_RESET);
      if (status & SIE_SETUP_REC) {
        const setup = [...this.em.mcu.usbDPRAM.slice(0, 8)];
        this.em.write32(SIE_STATUS, SIE_SETUP_REC);
        this.setups.push(setup);
        const length = setup[6] | (setup[7] << 8);
        if (setup[0] === 0x80 && setup[1] === 6 && setup[3] === 2) this.ep0In(CONFIGURATION.slice(0, length));
        else if (setup[0] === 0x80 && setup[1] === 6 && setup[3] === 1) this.ep0In(DEVICE.slice(0, length));
        else if (setup[0] === 0x80 && setup[1] === 6 && setup[3] === 3 && setup[2] === 3) {
          this.ep0In(SERIAL_STRING.slice(0, length));
        } else this.ep0In([]);
      }
    }
  }
  /** Arms the bulk IN endpoint with 64 bytes; true if the host took them within 100 µs. */
  sendIn() {
    this.write(EP1_IN_BUFFER, new Array(64).fill(0x55));
    this.em.write32(EP1_IN_BUF_CTRL, AVAILABLE | FULL | 64);
    this.run(100);
    return !(this.em.read32(EP1_IN_BUF_CTRL) & AVAILABLE);
  }
  lineStates() {
    return this.setups.filter((s) => s[1] === 0x22);
  }
}

/** A bridge and a device, enumerated; its socket is closed after the test. */
function connect(t, options) {
  const em = H.newEmulator();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rp2040-usb-'));
  const bridge = new UsbBridge(em, path.join(dir, 's'), options);
  t.after(() => bridge.close());
  const device = new FakeCdcDevice(em);
  device.run(12_000); // the 10 ms bus reset, then enumeration
  assert.ok(bridge.configured, 'enumerated');
  device.run(200);
  return { em, bridge, device };
}

test('the host asserts DTR and RTS after enumeration, to the CDC communication interface (as cdc_acm on open)', (t) => {
  const { device } = connect(t, {});
  // bmRequestType 0x21 (class, interface), SET_CONTROL_LINE_STATE, wValue DTR|RTS, wIndex 1 (the ACM interface).
  assert.deepEqual(device.lineStates(), [[0x21, 0x22, 3, 0, 1, 0, 0, 0]]);
});

test('--usb-no-dtr: the host never sends SET_CONTROL_LINE_STATE', (t) => {
  const { device, bridge } = connect(t, { dtr: false });
  assert.ok(device.sendIn(), 'the port still reads');
  assert.deepEqual(device.lineStates(), []);
  assert.equal(bridge.bytesOut, 64);
});

test('--usb-stop-reading-after N: the host takes IN packets up to N bytes, then leaves the buffer armed', (t) => {
  const all = connect(t, {});
  assert.deepEqual([1, 2, 3, 4].map(() => all.device.sendIn()), [true, true, true, true]);
  const { device, bridge } = connect(t, { stopReadingAfter: 100 });
  assert.deepEqual([1, 2, 3].map(() => device.sendIn()), [true, true, false]);
  device.run(10_000);
  assert.ok(device.em.read32(EP1_IN_BUF_CTRL) & AVAILABLE, 'still armed 10 ms later');
  assert.equal(bridge.bytesOut, 128);
  assert.equal(device.lineStates().length, 1, 'DTR stays set');
});

test('--usb-close-after N: after N bytes the host drops DTR and RTS and stops reading', (t) => {
  const { device, bridge } = connect(t, { closeAfter: 64 });
  assert.deepEqual([1, 2].map(() => device.sendIn()), [true, false]);
  assert.deepEqual(device.lineStates(), [
    [0x21, 0x22, 3, 0, 1, 0, 0, 0],
    [0x21, 0x22, 0, 0, 1, 0, 0, 0],
  ]);
  assert.equal(bridge.bytesOut, 64);
});

test("the host reads the device descriptor's iSerialNumber string once the port is open, with or without DTR", (t) => {
  for (const dtr of [true, false]) {
    const { device, bridge } = connect(t, { dtr });
    assert.equal(bridge.serialNumber, SERIAL, `dtr ${dtr}`);
    // GET_DESCRIPTOR (device), then GET_DESCRIPTOR (string 3, language 0x0409), after the line state.
    const asked = device.setups.filter((s) => s[1] === 6 && s[3] !== 2).map((s) => s.slice(2, 6));
    assert.deepEqual(asked, [
      [0, 1, 0, 0],
      [3, 3, 0x09, 0x04],
    ]);
    assert.ok(device.sendIn(), 'the port still reads');
  }
});
