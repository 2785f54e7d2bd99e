// The input synchronisers (--input-sync-clocks: PIO's `jmp pin`, `in`/`mov`
// from pins and SIO's GPIO_IN see a pad N clocks late unless the pin's
// INPUT_SYNC_BYPASS bit is set in that PIO block; datasheet 3.5.6.3, 2.19)
// and forced instructions (SMx_INSTR) taking their state machine's cycle
// (3.5.7). rp2040js sees a pad in the cycle it changes and runs a forced
// instruction for free.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PIO } from '../lib/emulator.mjs';
import * as H from './helpers.mjs';

const X0 = 0xffffffff;
const GPIO_IN = 0xd0000004;

/** The firmware's SM1 capture of edges on GP3 at cycles `edgesAt` after the enable, in clock time. */
function captures(options, edgesAt, { bypass = 0 } = {}) {
  const em = H.newEmulator(options);
  em.write32(H.pio(PIO.INPUT_SYNC_BYPASS), bypass);
  H.firmwareSetup(em);
  const t0 = em.cycles;
  edgesAt.forEach((c, i) => em.at((t0 + c) * 8, () => em.mcu.gpio[3].setInputValue(i % 2 === 0)));
  em.runCycles(edgesAt.at(-1) + 100);
  return H.rxAll(em, 1).map((x) => 2 * (X0 - x));
}

test('jmp pin (the edge program): an edge is seen 2 clocks later through the synchroniser, not with INPUT_SYNC_BYPASS', () => {
  const edgesAt = [1000, 1041, 1062, 1101, 1134, 1171];
  const asRp2040js = edgesAt.map((c) => c + (c % 2 === 0 ? 2 : 1));
  assert.deepEqual(captures({}, edgesAt), asRp2040js);
  assert.deepEqual(
    captures({ inputSyncClocks: 2 }, edgesAt),
    edgesAt.map((c) => c + 2 + (c % 2 === 0 ? 2 : 1)),
  );
  assert.deepEqual(captures({ inputSyncClocks: 3 }, edgesAt), edgesAt.map((c) => c + 3 + (c % 2 === 0 ? 1 : 2)));
  assert.deepEqual(captures({ inputSyncClocks: 2 }, edgesAt, { bypass: 1 << 3 }), asRp2040js, 'bypassed');
  assert.deepEqual(captures({ inputSyncClocks: 2 }, edgesAt, { bypass: 1 << 4 }).length, edgesAt.length);
  assert.notDeepEqual(captures({ inputSyncClocks: 2 }, edgesAt, { bypass: 1 << 4 }), asRp2040js, "another pin's bypass");
});

/** SM0 runs `mov x, pins` every cycle (IN_BASE 0); GP3 rises at cycle 50 after the enable. */
function movPins(options, bypass = 0) {
  const em = H.newEmulator(options);
  em.write32(H.pio(PIO.INPUT_SYNC_BYPASS), bypass);
  H.load(em, ['mov x, pins'], 0);
  em.write32(H.sm(0, PIO.SM0_EXECCTRL), H.execctrl({ wrapTop: 0, wrapBottom: 0 }));
  em.write32(H.pio(PIO.CTRL), 1);
  const t0 = em.cycles;
  em.at((t0 + 50) * 8, () => em.mcu.gpio[3].setInputValue(true));
  const sm = em.mcu.pio[0].machines[0];
  const seen = [];
  for (let c = 0; c < 60; c++) {
    em.runCycles(1); // PIO step of cycle c
    if (sm.x & (1 << 3)) seen.push(c);
    if (em.read32(GPIO_IN) & (1 << 3)) seen.push(`sio ${c}`);
  }
  return [seen.find((v) => typeof v === 'number'), seen.find((v) => typeof v === 'string')];
}

test('mov x, pins and SIO GPIO_IN: a pad change at cycle c is read at c + N', () => {
  assert.deepEqual(movPins({}), [50, 'sio 50'], "rp2040js: the cycle it changes");
  assert.deepEqual(movPins({ inputSyncClocks: 2 }), [52, 'sio 52']);
  assert.deepEqual(movPins({ inputSyncClocks: 2 }, 1 << 3), [50, 'sio 52'], 'PIO bypassed, SIO still synchronised');
});

test('a forced instruction (SMx_INSTR) takes its state machine cycle: the program runs one cycle later', () => {
  for (const [forced, lag] of [
    [false, 0],
    [true, 1],
  ]) {
    const em = H.newEmulator();
    H.load(em, ['jmp x-- 1', 'jmp x-- 0'], 0); // X decrements every cycle
    em.write32(H.sm(0, PIO.SM0_EXECCTRL), H.execctrl({ wrapTop: 1, wrapBottom: 0 }));
    H.exec(em, 0, 'mov x, ~null');
    em.write32(H.pio(PIO.CTRL), 1);
    em.runCycles(10);
    if (forced) H.exec(em, 0, 'set y, 5');
    em.runCycles(10);
    const sm = em.mcu.pio[0].machines[0];
    assert.equal(sm.x, (X0 - 20 + lag) >>> 0, forced ? 'one cycle went to the forced instruction' : 'no forced instruction');
    if (forced) assert.equal(sm.y, 5);
  }
});

test('a forced instruction runs in the first cycle after the write; while disabled, at once', () => {
  const em = H.newEmulator();
  H.load(em, ['jmp 0'], 0);
  H.exec(em, 0, 'set y, 7');
  assert.equal(em.mcu.pio[0].machines[0].y, 7, 'disabled: at once');
  em.write32(H.pio(PIO.CTRL), 1);
  em.runCycles(3);
  H.exec(em, 0, 'set y, 9');
  em.runCycles(1);
  assert.equal(em.mcu.pio[0].machines[0].y, 9);
});
