// The harness where silicon is harsher than rp2040js (GAPS.md, "Harsher
// than rp2040js"): the XIP cache model and its miss stall, the refusal of a
// fetch from flash once the run has started, the watchdog that refuses the
// run, and the pad report. Each test fails on rp2040js's own behaviour.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Emulator, IO_BANK0_BASE, PADS_BANK0_BASE, PAD_RESET_SILICON, Refusal, WATCHDOG_BASE } from '../lib/emulator.mjs';
import { watchOutput } from '../lib/target.mjs';
import { XIP_SETS, XipCache } from '../lib/xip-cache.mjs';
import * as H from './helpers.mjs';

// Thumb encodings (ARMv6-M ARM, A6.7).
const T = {
  ldrLit: (rt, imm) => 0x4800 | (rt << 8) | (imm >> 2), // LDR Rt, [PC, #imm]
  str: (rt, rn) => 0x6000 | (rn << 3) | rt, // STR Rt, [Rn]
  bx: (rm) => 0x4700 | (rm << 3),
  blx: (rm) => 0x4780 | (rm << 3),
  bxLr: 0x4770,
  nop: 0xbf00,
  self: 0xe7fe, // b .
};

const SIO_GPIO_OUT_SET = 0xd0000014;
const SIO_GPIO_OE_SET = 0xd0000024;
const TIMERAWL = 0x40054028;

/** An emulator booting a vector table at 0x10000100 into `code` (halfwords at `at`), literals as {address: word}. */
function program(options, at, code, literals = {}) {
  const em = new Emulator({ log: () => {}, ...options });
  const flash = new DataView(em.mcu.flash.buffer);
  flash.setUint32(0x100, 0x20001000, true);
  flash.setUint32(0x104, (at | 1) >>> 0, true);
  code.forEach((half, i) => flash.setUint16(at - 0x10000000 + 2 * i, half, true));
  for (const [address, word] of Object.entries(literals)) flash.setUint32(Number(address) - 0x10000000, word, true);
  em.boot();
  return em;
}

test('the XIP cache model: 1024 sets of two 8-byte lines, LRU; NOALLOC looks up only; NOCACHE always misses', () => {
  const cache = new XipCache({ missNs: 1, forbidFetch: false, flash16: new Uint16Array(16), refuse: () => {} });
  const way = XIP_SETS * 8; // the same set, another tag
  const a = 0x10000040;
  assert.equal(cache.access(a), 1);
  assert.equal(cache.access(a + way), 1);
  assert.equal(cache.access(a), 0, 'two ways: both stay');
  assert.equal(cache.access(a + way), 0);
  assert.equal(cache.access(a + 7), 0, 'the same 8-byte line');
  assert.equal(cache.access(a + 8), 1, 'the next line');
  assert.equal(cache.access(a + 2 * way), 1, 'a third tag evicts the least recently used (a + way)');
  assert.equal(cache.access(a), 0);
  assert.equal(cache.access(a + 2 * way), 0);
  assert.equal(cache.access(a + way), 1);
  assert.equal(cache.access(a + 2 * way), 0, 'which evicted a, the least recently used');
  assert.equal(cache.access(a), 1);
  assert.equal(cache.access(0x11000000 + 0x800), 1, 'NOALLOC misses');
  assert.equal(cache.access(0x10000800), 1, '...and did not fill');
  assert.equal(cache.access(0x11000800), 0, 'NOALLOC hits a filled line');
  assert.equal(cache.access(0x12000800), 1, 'NOCACHE');
  assert.equal(cache.access(0x13000800), 1, 'NOCACHE_NOALLOC');
});

/**
 * Line-aligned code at 0x10000200: two literal loads (each from its own
 * line), two NOPs, then at 0x10000208 (a new line) a store that sets GP7
 * through SIO. Four misses, the last one before the store.
 */
function storeAfterMisses(options) {
  const em = program(options, 0x10000200, [T.ldrLit(0, 0x20), T.ldrLit(1, 0x24), T.nop, T.nop, T.str(1, 0), T.self], {
    0x10000224: SIO_GPIO_OUT_SET,
    0x10000228: 1 << 7,
  });
  H.funcsel(em, 7, 5); // SIO
  em.write32(SIO_GPIO_OE_SET, 1 << 7);
  const edges = [];
  watchOutput(em, 7, (level, ns) => edges.push([level, ns]));
  em.runCycles(2000);
  return { em, edges };
}

test('--xip-miss-ns: each miss stalls the core before its instruction, while time runs on (fetches and literal loads)', () => {
  const off = storeAfterMisses({});
  assert.equal(off.edges.length, 1);
  assert.ok(off.edges[0][1] < 100, `no wait states: GP7 at ${off.edges[0][1]} ns`);

  const { em, edges } = storeAfterMisses({ xipMissNs: 3000 });
  assert.equal(edges.length, 1);
  const [level, ns] = edges[0];
  assert.equal(level, 1);
  // Four misses of 375 cycles (3000 ns at 8 ns), all before the store, and the few instruction cycles.
  assert.ok(ns >= 4 * 3000 && ns < 4 * 3000 + 100, `GP7 rose at ${ns} ns`);
  assert.equal(em.xip.misses, 4);
  assert.ok(em.xipStallCycles >= 4 * 375);
  assert.ok(em.read32(TIMERAWL) >= 12, 'the timer ran on while the core waited');
});

test('--xip-miss-ns: code that stays in the cache pays once', () => {
  // A loop of 4 NOPs and a branch back, 10 bytes across two lines: 2 misses however long it runs.
  const em = program({ xipMissNs: 1000 }, 0x10000300, [T.nop, T.nop, T.nop, T.nop, 0xe7fa]); // b 0x10000300
  em.runCycles(100_000);
  assert.equal(em.xip.misses, 2);
});

test('--forbid-xip-fetch: a fetch from flash after the core ran from SRAM refuses the run, naming the PC', () => {
  // Flash: call `bx lr` in SRAM at 0x20000000, then return to `b .` in flash at 0x10000204.
  const code = [T.ldrLit(0, 0x10), T.blx(0), T.self];
  const run = (options) => {
    const em = program(options, 0x10000200, code, { 0x10000214: 0x20000001 });
    em.mcu.sram[0] = T.bxLr & 0xff;
    em.mcu.sram[1] = T.bxLr >> 8;
    em.runCycles(1000);
    return em;
  };
  assert.equal(run({}).core.PC, 0x10000204, 'rp2040js: back in flash, spinning');
  assert.throws(
    () => run({ forbidXipFetch: true }),
    (e) => e instanceof Refusal && /fetched from XIP flash at PC 0x10000204 .*SRAM, at 0x20000000/.test(e.message),
  );
  // Flash code before any SRAM code or PIO runs freely.
  const em = program({ forbidXipFetch: true }, 0x10000200, [T.nop, T.self]);
  em.runCycles(1000);
  assert.equal(em.core.PC, 0x10000202);
});

test('--forbid-xip-fetch: a fetch from flash once a PIO state machine is enabled refuses the run', () => {
  const em = program({ forbidXipFetch: true }, 0x10000200, [T.nop, T.self]);
  em.runCycles(100);
  H.load(em, ['jmp 0'], 0);
  H.enableAll(em);
  assert.throws(() => em.runCycles(10), (e) => e instanceof Refusal && /first PIO state machine enabled/.test(e.message));
});

const WATCHDOG = { CTRL: WATCHDOG_BASE, LOAD: WATCHDOG_BASE + 4, TICK: WATCHDOG_BASE + 0x2c };
const WATCHDOG_ENABLE = 1 << 30;

test('a watchdog fed within its time runs on; one not fed refuses the run (rp2040js only warned)', () => {
  const em = H.newEmulator();
  em.write32(WATCHDOG.TICK, (1 << 9) | 12); // tick generator: 12 clk_ref cycles, 1 µs
  const feed = () => em.write32(WATCHDOG.LOAD, 2 * 1_000_000); // 1 s: the counter takes 2 a µs (RP2040-E1)
  feed();
  em.write32(WATCHDOG.CTRL, WATCHDOG_ENABLE);
  for (let t = 1; t <= 6; t++) {
    em.runUntil(t * 600_000_000); // fed every 0.6 s for 3.6 s
    feed();
  }
  assert.equal(em.failure, null);
  assert.throws(
    () => em.runUntil(6 * 600_000_000 + 1_100_000_000),
    (e) => e instanceof Refusal && /the watchdog ran out at 4600\.0\d\d ms/.test(e.message),
  );
});

test('a reset forced by WATCHDOG CTRL.TRIGGER refuses the run', () => {
  const em = H.newEmulator();
  assert.throws(() => em.write32(WATCHDOG.CTRL, 1 << 31), (e) => e instanceof Refusal && /CTRL\.TRIGGER/.test(e.message));
});

test('the pad report: PADS_BANK0 and IO_BANK0 GPIO0..29 as the firmware left them, from the silicon reset 0x56', () => {
  const em = H.newEmulator();
  const report = em.padReport();
  assert.equal(report.gpio.length, 30);
  assert.deepEqual(
    { ...report.gpio[5] },
    { gpio: 5, pad: PAD_RESET_SILICON, slewfast: false, schmitt: true, pde: true, pue: false, drive_ma: 4, ie: true, od: false, ctrl: 0x1f, funcsel: 0x1f },
  );
  em.write32(PADS_BANK0_BASE + 4 + 4 * 2, 0x71); // IE, 12 mA, fast slew, no Schmitt, no pulls
  em.write32(PADS_BANK0_BASE + 4 + 4 * 5, 0x4a); // IE, 2 mA, pull-up, Schmitt
  em.write32(IO_BANK0_BASE + 8 * 2 + 4, 6);
  const pins = em.padReport().gpio;
  assert.deepEqual([pins[2].drive_ma, pins[2].slewfast, pins[2].schmitt, pins[2].pde, pins[2].funcsel], [12, true, false, false, 6]);
  assert.deepEqual([pins[5].drive_ma, pins[5].pue, pins[5].pde, pins[5].schmitt, pins[5].ie], [2, true, false, true, true]);
});
