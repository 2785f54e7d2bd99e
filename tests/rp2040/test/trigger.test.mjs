// The Pico's trigger output rests on one property of the harness: a second
// PIO block (PIO1), synchronised once by an edge PIO0 drives on a pin, then
// runs the same program in step with PIO0 forever (both stepped once per
// system clock, PIO0 first, the pin seen by PIO1 in the cycle it changes).
// Here with the firmware's stimulus program (board::pico::program STIMULUS,
// the same text) in both blocks and a sync read in the cycle the pin
// changes (the Emulator's default, no input synchroniser; the target word
// minus one). The firmware itself now syncs through the synchroniser
// (program::trigger_sync_x, W - 3, and a one-clock step), which the Rust
// end-to-end trigger tests check with --input-sync-clocks 2; this test
// proves the harness's lockstep property the trigger rests on.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assemble } from '../lib/pio-asm.mjs';
import { IO_BANK0_BASE, PIO, PIO0_BASE, PIO1_BASE } from '../lib/emulator.mjs';
import { watchOutput } from '../lib/target.mjs';
import * as H from './helpers.mjs';

/** board::pico::program::STIMULUS, at 16..31. */
const FIRMWARE_STIMULUS = [
  'jmp x-- 17',
  'mov y, ~status',
  'jmp x-- 19',
  'jmp !y 16',
  'pull noblock',
  'mov y, osr',
  'jmp x-- 23',
  'jmp x-- 24',
  'jmp x-- 25',
  'jmp x!=y 24',
  'mov isr, ~isr',
  'mov pins, isr',
  'irq nowait 0 rel',
  'jmp x-- 30',
  'jmp x-- 31',
  'jmp x-- 16',
];
const SYNC_PIN = 7;
const PIO0_PIN = 8;
const TRIGGER_PIN = 9;
const FUNCSEL_PIO1 = 7;

const reg = (base, n, r) => base + r + n * PIO.SM_STRIDE;

function setup() {
  const em = H.newEmulator();
  for (const base of [PIO0_BASE, PIO1_BASE]) {
    assemble(FIRMWARE_STIMULUS).forEach((w, i) => em.write32(base + PIO.INSTR_MEM0 + 4 * (16 + i), w));
  }
  // PIO1: the sync loop at 0.
  em.write32(PIO1_BASE + PIO.INSTR_MEM0, assemble(['jmp pin 16'])[0]);
  H.funcsel(em, SYNC_PIN, H.FUNCSEL_PIO0);
  H.funcsel(em, PIO0_PIN, H.FUNCSEL_PIO0);
  H.funcsel(em, TRIGGER_PIN, FUNCSEL_PIO1);
  // PIO0 SM3: the stimulus, its OUT pin the sync pin for now.
  em.write32(reg(PIO0_BASE, 3, PIO.SM0_EXECCTRL), H.execctrl({ wrapTop: 31, wrapBottom: 16, statusN: 1 }));
  em.write32(reg(PIO0_BASE, 3, PIO.SM0_PINCTRL), H.pinctrl({ outBase: SYNC_PIN, outCount: 1, setBase: SYNC_PIN, setCount: 1 }));
  const exec0 = (line) => em.write32(reg(PIO0_BASE, 3, PIO.SM0_INSTR), assemble([line])[0]);
  exec0('mov x, ~null');
  exec0('mov isr, null');
  exec0('set pindirs, 1');
  em.write32(reg(PIO0_BASE, 3, PIO.SM0_PINCTRL), H.pinctrl({ outBase: SYNC_PIN, outCount: 1, setBase: PIO0_PIN, setCount: 1 }));
  exec0('set pindirs, 1');
  exec0('jmp 16');
  em.write32(PIO0_BASE + PIO.CTRL, 1 << 3);
  return em;
}

test('PIO1 synchronised by one PIO0 edge holds PIO0 SM3\'s PC and X at every clock, and the same target makes its edge in the same cycle', () => {
  const em = setup();
  const X0 = 0xffffffff;
  const syncTarget = (X0 - 2000) >>> 0; // an X value 2000 ticks ahead
  // PIO1 SM0: sync loop (wrap 0..0, JMP_PIN = the sync pin), X = the target word - 1.
  em.write32(reg(PIO1_BASE, 0, PIO.SM0_EXECCTRL), H.execctrl({ wrapTop: 0, wrapBottom: 0, jmpPin: SYNC_PIN, statusN: 1 }));
  em.write32(reg(PIO1_BASE, 0, PIO.SM0_PINCTRL), H.pinctrl({ outBase: TRIGGER_PIN, outCount: 1, setBase: TRIGGER_PIN, setCount: 1 }));
  const exec1 = (line) => em.write32(reg(PIO1_BASE, 0, PIO.SM0_INSTR), assemble([line])[0]);
  exec1('mov isr, null');
  exec1('set pindirs, 1');
  em.write32(PIO1_BASE + PIO.TXF0, (syncTarget - 1) >>> 0);
  exec1('pull block');
  exec1('mov x, osr');
  exec1('jmp 0');
  em.write32(PIO1_BASE + PIO.CTRL, 1);
  // The sync edge: PIO0 SM3's target on the sync pin; then its OUT pin is PIO0_PIN.
  em.write32(PIO0_BASE + PIO.TXF0 + 12, syncTarget);
  em.runCycles(5000);
  const sm0 = em.mcu.pio[0].machines[3];
  const sm1 = em.mcu.pio[1].machines[0];
  assert.notEqual(sm1.pc, 0, 'PIO1 left its sync loop');
  em.write32(reg(PIO1_BASE, 0, PIO.SM0_EXECCTRL), H.execctrl({ wrapTop: 31, wrapBottom: 16, statusN: 1 }));
  em.write32(reg(PIO0_BASE, 3, PIO.SM0_PINCTRL), H.pinctrl({ outBase: PIO0_PIN, outCount: 1, setBase: PIO0_PIN, setCount: 1 }));
  for (let i = 0; i < 1000; i++) {
    assert.deepEqual([sm1.pc, sm1.x >>> 0], [sm0.pc, sm0.x >>> 0], `clock ${i} after the sync`);
    em.runCycles(1);
  }
  // One target to both (PIO0 SM3's ISR is high after the sync toggle: its
  // edge falls, PIO1's rises): the edges come in the same cycle.
  const edges = { [PIO0_PIN]: [], [TRIGGER_PIN]: [] };
  for (const pin of [PIO0_PIN, TRIGGER_PIN]) watchOutput(em, pin, (level, ns) => edges[pin].push(ns));
  pushBoth(em, sm0.x >>> 0);
  em.runCycles(14000);
  // PIO0 SM3's level (ISR) is high after the sync's toggle, its new pin
  // low: its first toggle makes no edge; PIO1's does.
  assert.equal(edges[TRIGGER_PIN].length, 4, 'PIO1 made every edge');
  assert.deepEqual(edges[TRIGGER_PIN].slice(1), edges[PIO0_PIN]);
});

/** The same four targets to PIO0 SM3 and PIO1 SM0, 3000 to 5200 ticks after X = `now`. */
function pushBoth(em, now) {
  for (const d of [3000, 3601, 4513, 5200]) {
    const w = (now - d) >>> 0;
    em.write32(PIO0_BASE + PIO.TXF0 + 12, w);
    em.write32(PIO1_BASE + PIO.TXF0, w);
  }
}

test('without the minus one PIO1 runs a tick behind: the edges are 16 ns apart (the test sees it)', () => {
  const em = setup();
  const X0 = 0xffffffff;
  const syncTarget = (X0 - 2000) >>> 0;
  em.write32(reg(PIO1_BASE, 0, PIO.SM0_EXECCTRL), H.execctrl({ wrapTop: 0, wrapBottom: 0, jmpPin: SYNC_PIN, statusN: 1 }));
  em.write32(reg(PIO1_BASE, 0, PIO.SM0_PINCTRL), H.pinctrl({ outBase: TRIGGER_PIN, outCount: 1, setBase: TRIGGER_PIN, setCount: 1 }));
  const exec1 = (line) => em.write32(reg(PIO1_BASE, 0, PIO.SM0_INSTR), assemble([line])[0]);
  exec1('set pindirs, 1');
  em.write32(PIO1_BASE + PIO.TXF0, syncTarget);
  exec1('pull block');
  exec1('mov x, osr');
  exec1('jmp 0');
  em.write32(PIO1_BASE + PIO.CTRL, 1);
  em.write32(PIO0_BASE + PIO.TXF0 + 12, syncTarget);
  em.runCycles(5000);
  em.write32(reg(PIO1_BASE, 0, PIO.SM0_EXECCTRL), H.execctrl({ wrapTop: 31, wrapBottom: 16, statusN: 1 }));
  em.write32(reg(PIO0_BASE, 3, PIO.SM0_PINCTRL), H.pinctrl({ outBase: PIO0_PIN, outCount: 1, setBase: PIO0_PIN, setCount: 1 }));
  const edges = { [PIO0_PIN]: [], [TRIGGER_PIN]: [] };
  for (const pin of [PIO0_PIN, TRIGGER_PIN]) watchOutput(em, pin, (level, ns) => edges[pin].push(ns));
  pushBoth(em, em.mcu.pio[0].machines[3].x >>> 0);
  em.runCycles(14000);
  assert.equal(edges[TRIGGER_PIN].length, 4);
  assert.deepEqual(
    edges[TRIGGER_PIN].slice(1).map((ns, i) => ns - edges[PIO0_PIN][i]),
    [16, 16, 16],
  );
});
