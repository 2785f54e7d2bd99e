#!/usr/bin/env node
// Runs latprobe's Pico firmware ELF in rp2040js 1.4.1, with PIO in lockstep
// with the core, a target played at exact simulated nanoseconds and the USB
// CDC bridged to a unix socket. See GAPS.md for what rp2040js lacks and
// what the harness does about it.
//
//   node tests/rp2040/run.mjs --elf ELF --socket PATH
//        --mode gpio-echo|uart-echo|periodic|loopback
//        [--latencies FILE] [--edge rising|falling|toggle] [--return-ns N]
//        [--ppm N] [--period NS] [--line gpio|uart] [--baud N]
//        [--max-seconds S] [--profile FILE] [--uart0-socket PATH] [--pin-log FILE] [--verbose]
//        [--xip-miss-ns N] [--forbid-xip-fetch] [--input-sync-clocks N] [--usb-no-dtr]
//        [--usb-stop-reading-after N] [--usb-close-after N] [--pad-report FILE]
//        [--flash-unique-id HEX16]
//
// It serves one client on PATH (and, with --uart0-socket, one on the UART0
// host link's socket) and runs until a client closes its socket, then
// exits 0 and prints the emulator's speed to stderr. A
// negative value takes the `=` form: --ppm=-35.
//
// Modes (lib/target.mjs): gpio-echo answers each stimulus edge on GP2 by
// driving GP3 after the next latency (RETURN_DELAY_NS, 1000 ns, or
// --return-ns after max(the stimulus's return, the answer) back to idle);
// uart-echo echoes each byte UART1 sends (its frame modelled on GP4) on GP5
// and into UART1's RX FIFO, its start bit the latency after the sent one's;
// periodic toggles GP3 (or, --line uart, sends a byte on GP5) every
// --period ns (default 1 ms) on a clock skewed by --ppm; loopback wires GP2
// to GP3 and GP4 to GP5 with zero delay. Latency files: one ns integer a
// line, `x` for no answer, `#` comments; used in order and cycled. Answers
// queue in order behind a late one. RP2040_HARNESS_TRACE=1 logs the USB and
// UART traffic. --pin-log FILE writes every edge the firmware drives on GP2
// (stimulus), GP4 (UART1 TX) and GP6 (the trigger output) as `PIN LEVEL NS`
// lines, NS when the level is on the pad (lib/target.mjs watchOutput).
//
// Where silicon is harsher (GAPS.md, "Harsher than rp2040js"): --xip-miss-ns N
// stalls the core N ns for each miss in a model of the 16 KB two-way XIP
// cache (instruction fetches and data reads from flash; default 0, off);
// --forbid-xip-fetch refuses (exit 3) an instruction fetched from flash once
// the core has run from SRAM; --input-sync-clocks N (default 2) makes PIO
// and SIO's GPIO_IN see a pad N clocks after it changes unless the pin's
// INPUT_SYNC_BYPASS is set; the USB host asserts DTR after enumeration
// unless --usb-no-dtr, stops taking IN data after N bytes with
// --usb-stop-reading-after N, or drops DTR and stops reading after N bytes
// with --usb-close-after N; --pad-report FILE writes PADS_BANK0 and IO_BANK0
// GPIO0..29 as JSON at exit. A watchdog that runs out refuses the run.
//
// The boot ROM and the flash (lib/bootrom.mjs, lib/flash.mjs): the ROM's
// tables and rom_table_lookup, with connect_internal_flash,
// flash_exit_xip, flash_flush_cache and flash_enter_cmd_xip; any other ROM
// function refuses the run. The flash answers Read Unique ID (0x4B) with
// --flash-unique-id HEX16 (default E6614C311B2A3D21); a fetch or read of
// XIP flash while XIP is off refuses the run. The USB host reads the
// device's iSerialNumber string once the port is open and logs
// `usb serial number: …`; --pad-report's JSON has it as
// "usb_serial_number" (null if never read).
// Exit status: 0 done, 1 error, 2 usage, 3 refused (an emulator gap the
// harness will not paper over), 4 --max-seconds (wall clock) reached.

import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { loadInto } from './lib/elf.mjs';
import { Emulator, Refusal } from './lib/emulator.mjs';
import { DEFAULT_UNIQUE_ID } from './lib/flash.mjs';
import { GpioEcho, Latencies, Loopback, Periodic, PIN, RETURN_DELAY_NS, UartEcho, watchOutput } from './lib/target.mjs';
import { UsbBridge } from './lib/usb-bridge.mjs';
import { Uart0Bridge } from './lib/uart0-bridge.mjs';

const log = (line) => process.stderr.write(`rp2040 harness: ${line}\n`);

function usage(message) {
  log(`${message}\nusage: node tests/rp2040/run.mjs --elf ELF --socket PATH --mode gpio-echo|uart-echo|periodic|loopback ` +
    '[--latencies FILE] [--edge rising|falling|toggle] [--return-ns N] [--ppm N] [--period NS] [--line gpio|uart] ' +
    '[--baud N] [--max-seconds S] [--profile FILE] [--uart0-socket PATH] [--pin-log FILE] [--verbose] ' +
    '[--xip-miss-ns N] [--forbid-xip-fetch] [--input-sync-clocks N] [--usb-no-dtr] [--usb-stop-reading-after N] ' +
    '[--usb-close-after N] [--pad-report FILE] [--flash-unique-id HEX16]');
  process.exit(2);
}

function number(value, name, { integer = false, min = -Infinity } = {}) {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || (integer && !Number.isInteger(n)) || n < min) usage(`--${name} ${value}: not a valid number`);
  return n;
}

let args;
try {
  args = parseArgs({
    options: {
      elf: { type: 'string' },
      socket: { type: 'string' },
      mode: { type: 'string' },
      latencies: { type: 'string' },
      edge: { type: 'string', default: 'rising' },
      'return-ns': { type: 'string' },
      ppm: { type: 'string' },
      period: { type: 'string' },
      line: { type: 'string', default: 'gpio' },
      baud: { type: 'string' },
      'max-seconds': { type: 'string' },
      profile: { type: 'string' },
      'uart0-socket': { type: 'string' },
      'pin-log': { type: 'string' },
      verbose: { type: 'boolean', default: false },
      'xip-miss-ns': { type: 'string' },
      'forbid-xip-fetch': { type: 'boolean', default: false },
      'input-sync-clocks': { type: 'string' },
      'usb-no-dtr': { type: 'boolean', default: false },
      'usb-stop-reading-after': { type: 'string' },
      'usb-close-after': { type: 'string' },
      'pad-report': { type: 'string' },
      'flash-unique-id': { type: 'string' },
    },
    strict: true,
  }).values;
} catch (e) {
  usage(e.message);
}

const modes = ['gpio-echo', 'uart-echo', 'periodic', 'loopback'];
if (!args.elf) usage('--elf is required');
if (!args.socket) usage('--socket is required');
if (!modes.includes(args.mode)) usage(`--mode must be one of ${modes.join(', ')}`);
const ppm = number(args.ppm, 'ppm') ?? 0;
const periodNs = number(args.period, 'period', { min: 1 }) ?? 1_000_000;
const baud = number(args.baud, 'baud', { min: 1 });
const maxSeconds = number(args['max-seconds'], 'max-seconds', { min: 0 });
const returnNs = number(args['return-ns'], 'return-ns', { integer: true, min: 16 }) ?? RETURN_DELAY_NS;
const xipMissNs = number(args['xip-miss-ns'], 'xip-miss-ns', { integer: true, min: 0 }) ?? 0;
const inputSyncClocks = number(args['input-sync-clocks'], 'input-sync-clocks', { integer: true, min: 0 }) ?? 2;
if (inputSyncClocks > 64) usage(`--input-sync-clocks ${inputSyncClocks}: at most 64`);
const usbStopReadingAfter = number(args['usb-stop-reading-after'], 'usb-stop-reading-after', { integer: true, min: 0 }) ?? null;
const flashUniqueId = args['flash-unique-id'] ?? DEFAULT_UNIQUE_ID;
if (!/^[0-9a-fA-F]{16}$/.test(flashUniqueId)) usage(`--flash-unique-id ${flashUniqueId}: 16 hex digits`);
const usbCloseAfter = number(args['usb-close-after'], 'usb-close-after', { integer: true, min: 0 }) ?? null;

let latencies = null;
if (args.mode === 'gpio-echo' || args.mode === 'uart-echo') {
  if (!args.latencies) usage(`--mode ${args.mode} needs --latencies FILE`);
  try {
    latencies = Latencies.parse(fs.readFileSync(args.latencies, 'utf8'), args.latencies);
  } catch (e) {
    usage(e.message);
  }
}

let elf;
try {
  elf = fs.readFileSync(args.elf);
} catch (e) {
  usage(`--elf ${args.elf}: ${e.message}`);
}

const emulator = new Emulator({
  log,
  verbose: args.verbose,
  xipMissNs,
  forbidXipFetch: args['forbid-xip-fetch'],
  inputSyncClocks,
  flashUniqueId,
});
if (args.profile) emulator.profile = new Map();
let pinLog = null;
if (args['pin-log']) {
  try {
    pinLog = fs.openSync(args['pin-log'], 'w');
  } catch (e) {
    usage(`--pin-log ${args['pin-log']}: ${e.message}`);
  }
  for (const pin of [PIN.STIMULUS, PIN.UART_TX, PIN.TRIGGER]) {
    // The trigger pin undriven (PIO1's hardware disarm) is low: its pad's pull-down.
    const undriven = pin === PIN.TRIGGER ? 0 : null;
    watchOutput(emulator, pin, (level, ns) => fs.writeSync(pinLog, `${pin} ${level} ${ns}\n`), { undriven });
  }
}
let target;
let bridge;
try {
  loadInto(emulator.mcu, new Uint8Array(elf.buffer, elf.byteOffset, elf.byteLength));
  emulator.boot(0x10000100);
  const bitNs = baud ? 1e9 / baud : null;
  switch (args.mode) {
    case 'gpio-echo':
      target = new GpioEcho(emulator, latencies, { edge: args.edge, returnDelayNs: returnNs });
      break;
    case 'uart-echo':
      target = new UartEcho(emulator, latencies, { bitNs });
      break;
    case 'periodic':
      target = new Periodic(emulator, { periodNs, ppm, line: args.line, bitNs });
      break;
    case 'loopback':
      target = new Loopback(emulator);
      break;
  }
} catch (e) {
  log(e.message);
  process.exit(1);
}

let clientClosed = false;
bridge = new UsbBridge(emulator, args.socket, {
  log,
  dtr: !args['usb-no-dtr'],
  stopReadingAfter: usbStopReadingAfter,
  closeAfter: usbCloseAfter,
  onClientClosed: () => {
    clientClosed = true;
  },
});

// The second host link: UART0 at the firmware's 921600 Bd, on its own socket.
const uart0 = args['uart0-socket']
  ? new Uart0Bridge(emulator, args['uart0-socket'], {
      baud: 921_600,
      onClientClosed: () => {
        clientClosed = true;
      },
    })
  : null;

const wallStart = performance.now();

function report() {
  const wall = (performance.now() - wallStart) / 1000;
  const sim = emulator.nowNs / 1e9;
  log(
    `speed: ${sim.toFixed(4)} s simulated in ${wall.toFixed(2)} s wall = ${(sim / wall).toFixed(4)} simulated s per wall s ` +
      `(${(emulator.cycles / wall / 1e6).toFixed(1)} M cycles/s, ${emulator.cycles} cycles, ${emulator.exceptions} exceptions)`,
  );
  const line = target?.line;
  if (line?.dropped) log(`UART1: ${line.dropped} byte(s) written to a full TX FIFO were dropped`);
  if (line?.rxDropped) log(`UART1: ${line.rxDropped} byte(s) from the target found the receiver off or full`);
  log(`USB: ${bridge.bytesIn} B host to device, ${bridge.bytesOut} B device to host`);
  if (!bridge.reading) log(`USB: the host stopped reading after ${bridge.bytesTaken} B; ${bridge.heldIn} IN arm(s) left waiting`);
  const xip = emulator.xip;
  if (xip?.missNs) {
    log(
      `XIP cache: ${xip.misses} miss(es), ${xip.hits} hit(s); the core stalled ${emulator.xipStallCycles} cycles ` +
        `(${((emulator.xipStallCycles * emulator.cycleNs) / 1e6).toFixed(3)} ms) at ${xip.missNs} ns a miss`,
    );
  }
  if (args['pad-report']) {
    try {
      const padReport = { ...emulator.padReport(), usb_serial_number: bridge.serialNumber };
      fs.writeFileSync(args['pad-report'], JSON.stringify(padReport, null, 1) + '\n');
    } catch (e) {
      log(`--pad-report ${args['pad-report']}: ${e.message}`);
    }
  }
  if (uart0) log(`UART0: ${uart0.bytesIn} B host to device, ${uart0.bytesOut} B device to host`);
  if (emulator.profile) {
    // "address cycles", most cycles first; exception entries apart (llvm-addr2line -f -e ELF names them).
    const rows = [...emulator.profile].sort((a, b) => b[1] - a[1]);
    const lines = rows.map(([pc, n]) => `0x${pc.toString(16)} ${n}`);
    lines.unshift(`# core cycles by instruction address; exception entries: ${emulator.exceptions} x 15 cycles`);
    fs.writeFileSync(args.profile, lines.join('\n') + '\n');
    log(`profile: ${rows.length} addresses written to ${args.profile}`);
  }
}

async function main() {
  await bridge.listening;
  if (uart0) await uart0.listening;
  log(`mode ${args.mode}; listening on ${args.socket}${uart0 ? ` and (UART0) ${args['uart0-socket']}` : ''}`);
  let chunk = 100_000;
  for (;;) {
    const t0 = performance.now();
    try {
      emulator.runCycles(chunk);
    } catch (e) {
      if (e instanceof Refusal) {
        log(`refused: ${e.message}`);
        report();
        bridge.close();
        process.exit(3);
      }
      throw e;
    }
    const dt = performance.now() - t0;
    if (dt < 5 && chunk < 10_000_000) chunk *= 2;
    else if (dt > 20 && chunk > 1000) chunk = Math.floor(chunk / 2);
    if (clientClosed) {
      report();
      bridge.close();
      process.exit(0);
    }
    if (maxSeconds !== undefined && (performance.now() - wallStart) / 1000 > maxSeconds) {
      log(`--max-seconds ${maxSeconds}: stopped (wall clock) before the client closed the socket`);
      report();
      bridge.close();
      process.exit(4);
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
}

main().catch((e) => {
  log(`error: ${e.stack || e}`);
  process.exit(1);
});
