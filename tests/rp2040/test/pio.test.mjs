// The harness proved against rp2040js itself: PIO0 programmed from JS
// through its registers, every PIO feature the firmware uses, stepped in
// lockstep; expectations from the RP2040 datasheet, not from rp2040js.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GPIOPinState } from 'rp2040js';
import { setTimeout as sleep } from 'node:timers/promises';
import { IO_BANK0_BASE, PADS_BANK0_BASE, PIO, Refusal } from '../lib/emulator.mjs';
import { assemble } from '../lib/pio-asm.mjs';
import { watchOutput } from '../lib/target.mjs';
import * as H from './helpers.mjs';

const X0 = 0xffffffff;
const FDEBUG_RXSTALL = (n) => 1 << n;
const FDEBUG_TXSTALL = (n) => 1 << (24 + n);

/** Cycle of the CTRL write that enabled the state machines: the first PIO step is this cycle. */
function started(emulator) {
  return emulator.cycles;
}

test('SM0 clock: `in x, 32` at every 4th cycle pushes X0 - 2q (one decrement per 2 cycles, lockstep)', () => {
  const em = H.newEmulator();
  H.firmwareSetup(em);
  em.runCycles(2);
  // The in at cycle 0 took X0 into the ISR, the push at cycle 1 pushed it.
  assert.deepEqual(H.rxAll(em, 0), [X0]);
  em.runCycles(3); // cycles 2..4: two decrements, the next in; no push yet
  assert.deepEqual(H.rxAll(em, 0), []);
  em.runCycles(1);
  assert.deepEqual(H.rxAll(em, 0), [X0 - 2]);
  em.runCycles(4000);
  // The FIFO (4 deep, not joined) holds the first four pushes after the read.
  assert.deepEqual(H.rxAll(em, 0), [X0 - 4, X0 - 6, X0 - 8, X0 - 10]);
});

test("rp2040js's own setTimeout PIO loop is off: nothing runs between steps", async () => {
  const em = H.newEmulator();
  H.firmwareSetup(em);
  const machines = em.mcu.pio[0].machines;
  const before = machines.map((sm) => [sm.pc, sm.x]);
  await sleep(30);
  assert.deepEqual(
    machines.map((sm) => [sm.pc, sm.x]),
    before,
  );
  assert.equal(em.mcu.pio[0].runTimer, null);
});

test('stimulus: each edge comes out exactly at cycle 2 (X0 - Y) + 2 after the enable, for Y written to TXF3', () => {
  const em = H.newEmulator();
  H.firmwareSetup(em);
  const t0 = started(em);
  const edges = [];
  watchOutput(em, 2, (level, ns) => edges.push([level, ns]));
  const offsets = [2000, 2013, 2500, 3001, 3010];
  for (const d of offsets.slice(0, 4)) em.write32(H.pio(PIO.TXF0 + 12), X0 - d);
  em.runCycles(5000);
  em.write32(H.pio(PIO.TXF0 + 12), X0 - 3010); // written late (cycle 5000 < 6020): still on time
  em.runCycles(3000);
  assert.deepEqual(
    edges,
    offsets.map((d, i) => [i % 2 ? 0 : 1, (t0 + 2 * d + 3) * 8]), // on the pad after the step at 2 (X0 - Y) + 2
  );
});

test('capture: an edge at cycle c is pushed as clock time c + 2 (c even) or c + 1 (c odd): one tick, 16 ns', () => {
  for (const base of [1000, 1001, 1002, 1003, 4321]) {
    const em = H.newEmulator();
    H.firmwareSetup(em);
    const t0 = started(em);
    const edgesAt = [base, base + 40, base + 61, base + 100, base + 133, base + 170];
    edgesAt.forEach((c, i) => em.at((t0 + c) * 8, () => em.mcu.gpio[3].setInputValue(i % 2 === 0)));
    em.runCycles(base + 400);
    const captured = H.rxAll(em, 1).map((x) => 2 * (X0 - x));
    assert.deepEqual(
      captured,
      edgesAt.map((c) => c + (c % 2 === 0 ? 2 : 1)),
      `edges from cycle ${base}`,
    );
  }
});

test('FJOIN_RX: the RX FIFO is 8 deep, the TX FIFO reads full and empty', () => {
  const em = H.newEmulator();
  H.firmwareSetup(em);
  em.runCycles(10);
  const fstat = em.read32(H.pio(PIO.FSTAT));
  assert.ok(fstat & (1 << (16 + 1)), 'SM1 TX full');
  assert.ok(fstat & (1 << (24 + 1)), 'SM1 TX empty');
  // 10 edges on GP3, one every 50 cycles: 8 kept, RXSTALL for SM1.
  for (let i = 0; i < 10; i++) em.at((em.cycles + 20 + 50 * i) * 8, () => em.mcu.gpio[3].setInputValue(i % 2 === 0));
  em.runCycles(600);
  assert.equal(H.rxAll(em, 1).length, 8);
  assert.ok(em.read32(H.pio(PIO.FDEBUG)) & FDEBUG_RXSTALL(1));
});

test('`push noblock` to a full FIFO drops the word and sets FDEBUG.RXSTALL; FDEBUG is write-1-to-clear', () => {
  const em = H.newEmulator();
  H.firmwareSetup(em);
  em.runCycles(14); // pushes at cycles 1, 5, 9, 13: the FIFO is full, none dropped yet
  assert.equal(em.read32(H.pio(PIO.FDEBUG)) & FDEBUG_RXSTALL(0), 0);
  em.runCycles(4); // the push at 17 is dropped
  assert.ok(em.read32(H.pio(PIO.FDEBUG)) & FDEBUG_RXSTALL(0));
  assert.deepEqual(H.rxAll(em, 0), [X0, X0 - 2, X0 - 4, X0 - 6]);
  // Still set after draining; cleared by writing 1, and stays clear while nothing overflows.
  assert.ok(em.read32(H.pio(PIO.FDEBUG)) & FDEBUG_RXSTALL(0));
  em.write32(H.pio(PIO.FDEBUG), FDEBUG_RXSTALL(0));
  assert.equal(em.read32(H.pio(PIO.FDEBUG)) & FDEBUG_RXSTALL(0), 0);
  em.runCycles(8);
  assert.equal(em.read32(H.pio(PIO.FDEBUG)) & FDEBUG_RXSTALL(0), 0, 'two pushes into an empty FIFO');
  // Clearing SM0's flag leaves another state machine's flag alone.
  em.runCycles(40);
  em.write32(H.pio(PIO.FDEBUG), FDEBUG_RXSTALL(2));
  assert.ok(em.read32(H.pio(PIO.FDEBUG)) & FDEBUG_RXSTALL(0));
});

test('`pull noblock` from an empty TX FIFO copies X into OSR and sets no TXSTALL', () => {
  const em = H.newEmulator();
  const sm0 = em.mcu.pio[0].machines[0];
  H.load(em, ['pull noblock', 'mov y, osr', 'jmp 0'], 0);
  H.exec(em, 0, 'set x, 21');
  H.exec(em, 0, 'jmp 0');
  em.write32(H.pio(PIO.CTRL), 1 | (1 << 4)); // SM0 only
  em.runCycles(2);
  assert.equal(sm0.outputShiftReg, 21);
  assert.equal(sm0.y, 21);
  assert.equal(em.read32(H.pio(PIO.FDEBUG)) & FDEBUG_TXSTALL(0), 0);
  // With a word in the FIFO the pull takes it.
  em.write32(H.pio(PIO.TXF0), 0x12345678);
  em.runCycles(3);
  assert.equal(sm0.y, 0x12345678);
});

test('`mov y, ~status` with STATUS_SEL 0 (TX level) and STATUS_N 1: 0 when the TX FIFO is empty, ~0 otherwise', () => {
  const em = H.newEmulator();
  const sm0 = em.mcu.pio[0].machines[0];
  H.load(em, ['mov y, ~status', 'jmp 0'], 0);
  em.write32(H.sm(0, PIO.SM0_EXECCTRL), H.execctrl({ wrapTop: 1, wrapBottom: 0, statusSel: 0, statusN: 1 }));
  em.write32(H.pio(PIO.CTRL), 1 | (1 << 4));
  em.runCycles(2);
  assert.equal(sm0.y, 0);
  em.write32(H.pio(PIO.TXF0), 7);
  em.runCycles(2);
  assert.equal(sm0.y, 0xffffffff);
});

test('`jmp pin` follows EXECCTRL.JMP_PIN', () => {
  const em = H.newEmulator();
  const sm0 = em.mcu.pio[0].machines[0];
  // 0: jmp pin 3; 1: set y, 1; 2: jmp 0; 3: set y, 2 (wraps to 0)
  H.load(em, ['jmp pin 3', 'set y, 1', 'jmp 0', 'set y, 2'], 0);
  em.write32(H.sm(0, PIO.SM0_EXECCTRL), H.execctrl({ wrapTop: 3, wrapBottom: 0, jmpPin: 7 }));
  em.write32(H.pio(PIO.CTRL), 1 | (1 << 4));
  em.runCycles(4);
  assert.equal(sm0.y, 1);
  em.mcu.gpio[7].setInputValue(true);
  em.runCycles(4);
  assert.equal(sm0.y, 2);
  em.mcu.gpio[6].setInputValue(false);
  em.mcu.gpio[7].setInputValue(false);
  em.runCycles(4);
  assert.equal(sm0.y, 1);
});

test('wrap: after WRAP_TOP the next instruction is WRAP_BOTTOM (a jump does not wrap)', () => {
  const em = H.newEmulator();
  const sm0 = em.mcu.pio[0].machines[0];
  // 5: set x, 5; 6: set y, 6 (wrap top) -> 5; 9: jmp 6
  H.load(em, ['set x, 5', 'set y, 6'], 5);
  H.load(em, ['jmp 6'], 9);
  em.write32(H.sm(0, PIO.SM0_EXECCTRL), H.execctrl({ wrapTop: 6, wrapBottom: 5 }));
  H.exec(em, 0, 'jmp 9');
  em.write32(H.pio(PIO.CTRL), 1);
  const pcs = [];
  for (let i = 0; i < 5; i++) {
    em.runCycles(1);
    pcs.push(sm0.pc);
  }
  assert.deepEqual(pcs, [6, 5, 6, 5, 6]);
});

test('`irq nowait 0 rel` on SM3 sets IRQ flag 3 and, with INTE0 bit 11, PIO0_IRQ_0; IRQ is write-1-to-clear', () => {
  const em = H.newEmulator();
  const PIO0_IRQ_0 = 7;
  H.load(em, ['irq nowait 0 rel', 'jmp 1'], 0);
  H.exec(em, 3, 'jmp 0');
  em.write32(H.pio(PIO.IRQ0_INTE), 1 << 11);
  em.write32(H.pio(PIO.CTRL), 1 << 3);
  assert.equal(em.read32(H.pio(PIO.IRQ)), 0);
  em.runCycles(1);
  assert.equal(em.read32(H.pio(PIO.IRQ)), 1 << 3);
  assert.equal(em.read32(H.pio(PIO.IRQ0_INTS)), 1 << 11);
  assert.ok(em.core.pendingInterrupts & (1 << PIO0_IRQ_0));
  em.write32(H.pio(PIO.IRQ), 1 << 3);
  assert.equal(em.read32(H.pio(PIO.IRQ)), 0);
  assert.equal(em.core.pendingInterrupts & (1 << PIO0_IRQ_0), 0);
});

test('four state machines enabled in one CTRL write with SM_RESTART and CLKDIV_RESTART stay in step', () => {
  const em = H.newEmulator();
  H.load(em, H.CLOCK, 0);
  for (let n = 0; n < 4; n++) {
    em.write32(H.sm(n, PIO.SM0_EXECCTRL), H.execctrl({ wrapTop: 3, wrapBottom: 0 }));
    H.exec(em, n, 'mov x, ~null');
    H.exec(em, n, 'in x, 7'); // ISR shift count 7: SM_RESTART must clear it
    H.exec(em, n, 'jmp 0');
  }
  const machines = em.mcu.pio[0].machines;
  for (const sm of machines) assert.equal(sm.inputShiftCount, 7);
  H.enableAll(em);
  for (const sm of machines) {
    assert.equal(sm.inputShiftCount, 0, 'SM_RESTART clears the ISR shift count');
    assert.equal(sm.inputShiftReg, 0, 'and the ISR');
  }
  const pushed = [];
  for (let i = 0; i < 37; i++) {
    em.runCycles(1);
    const state = machines.map((sm) => [sm.pc, sm.x]);
    for (const s of state) assert.deepEqual(s, state[0], `cycle ${i}`);
    if (i % 4 === 0) pushed.push([0, 1, 2, 3].map((n) => H.rxAll(em, n)));
  }
  for (const p of pushed) for (const words of p) assert.deepEqual(words, p[0]);
  // A logged warning would mean rp2040js's "clkDivRestart not implemented" path ran.
  assert.deepEqual(em.logLines, []);
});

test('SMx_INSTR while disabled: mov x, ~null; mov isr, null; set pindirs, 1; jmp; a disabled SM does not step', () => {
  const em = H.newEmulator();
  const machines = em.mcu.pio[0].machines;
  H.load(em, H.CLOCK, 0);
  H.load(em, H.STIMULUS, 16);
  em.write32(H.sm(3, PIO.SM0_PINCTRL), H.pinctrl({ outBase: 2, outCount: 1, setBase: 2, setCount: 1 }));
  H.funcsel(em, 2, H.FUNCSEL_PIO0);
  machines[3].inputShiftReg = 0xdead;
  H.exec(em, 3, 'mov x, ~null');
  H.exec(em, 3, 'mov isr, null');
  assert.equal(machines[3].x, 0xffffffff);
  assert.equal(machines[3].inputShiftReg, 0);
  const states = [];
  em.mcu.gpio[2].addListener((state) => states.push(state));
  assert.equal(em.mcu.gpio[2].outputEnable, false);
  H.exec(em, 3, 'set pindirs, 1');
  assert.equal(em.mcu.gpio[2].outputEnable, true);
  assert.deepEqual(states, [GPIOPinState.Low], 'the direction reaches the GPIO (and its listeners) at once');
  H.exec(em, 3, 'jmp 16');
  assert.equal(machines[3].pc, 16);
  // SM0 enabled, SM3 not: SM3 must not move (rp2040js's RPPIO.step() steps all four).
  em.write32(H.pio(PIO.CTRL), 1);
  em.runCycles(50);
  assert.equal(machines[3].pc, 16);
  assert.equal(machines[3].x, 0xffffffff);
  assert.notEqual(machines[0].pc, 0);
});

test('GPIO OUTOVER = 1 inverts a PIO-driven pin: the pad, its listeners and its input read the inverse', () => {
  const em = H.newEmulator();
  H.firmwareSetup(em, { start: false });
  const gp2 = em.mcu.gpio[2];
  const levels = [];
  watchOutput(em, 2, (level, ns) => levels.push([level, ns]));
  H.enableAll(em);
  assert.equal(gp2.outputValue, false);
  assert.equal(gp2.inputValue, false);
  em.write32(IO_BANK0_BASE + 8 * 2 + 4, H.FUNCSEL_PIO0 | (1 << 8)); // OUTOVER = invert
  assert.equal(gp2.outputValue, true);
  assert.equal(gp2.inputValue, true, 'the input buffer reads the pad');
  em.write32(H.pio(PIO.TXF0 + 12), X0 - 100);
  em.runCycles(300);
  assert.equal(gp2.outputValue, false, 'PIO drove 1, the pad shows 0');
  assert.deepEqual(levels, [
    [1, 8],
    [0, (2 * 100 + 3) * 8],
  ]);
});

test('pads reset as on silicon (0x56: input enabled), not 0x36', () => {
  const em = H.newEmulator();
  for (let n = 0; n < 30; n++) assert.equal(em.read32(PADS_BANK0_BASE + 4 + 4 * n), 0x56, `GPIO${n}`);
});

test('refused: [delay] bits, side-set, a clock divider other than 1.0, WAIT, EXEC', () => {
  const cases = [
    ['delay', (em) => {
      H.load(em, ['jmp 0 [1]'], 0);
      em.write32(H.pio(PIO.CTRL), 1);
      em.runCycles(1);
    }, /delay/],
    ['side-set count', (em) => {
      H.load(em, ['jmp 0'], 0);
      em.write32(H.sm(0, PIO.SM0_PINCTRL), H.pinctrl({ sideSetCount: 1 }));
      em.write32(H.pio(PIO.CTRL), 1);
    }, /side-set/],
    ['side-set bits', (em) => {
      em.write32(H.pio(PIO.INSTR_MEM0), assemble(['jmp 0 side 1'], 1)[0]);
      em.write32(H.pio(PIO.CTRL), 1);
      em.runCycles(1);
    }, /side-set/],
    ['clock divider at enable', (em) => {
      H.load(em, ['jmp 0'], 0);
      em.write32(H.sm(0, PIO.SM0_CLKDIV), 2 << 16);
      em.write32(H.pio(PIO.CTRL), 1);
    }, /clock divider 2/],
    ['fractional divider while running', (em) => {
      H.load(em, ['jmp 0'], 0);
      em.write32(H.pio(PIO.CTRL), 1);
      em.runCycles(3);
      em.write32(H.sm(0, PIO.SM0_CLKDIV), (1 << 16) | (128 << 8));
    }, /clock divider 1.5/],
    ['wait', (em) => {
      H.load(em, ['wait 1 gpio 3'], 0);
      em.write32(H.pio(PIO.CTRL), 1);
      em.runCycles(1);
    }, /WAIT/],
    ['delay through SMx_INSTR', (em) => {
      H.exec(em, 1, 'set x, 1 [3]');
    }, /delay/],
    ['out exec', (em) => {
      H.load(em, ['out exec, 16'], 0);
      em.write32(H.pio(PIO.CTRL), 1);
      em.runCycles(1);
    }, /EXEC/],
  ];
  for (const [name, run, message] of cases) {
    const em = H.newEmulator();
    assert.throws(() => run(em), (e) => e instanceof Refusal && message.test(e.message), name);
  }
  // An unused slot holding a delay is no reason to refuse: only executing it is.
  const em = H.newEmulator();
  H.load(em, ['jmp 0'], 0);
  H.load(em, ['jmp 5 [7]'], 5);
  em.write32(H.pio(PIO.CTRL), 1);
  em.runCycles(100);
});

test('clk_sys must be 125 MHz when a state machine starts', () => {
  const em = H.newEmulator();
  em.mcu.clkSys = 48_000_000;
  H.load(em, ['jmp 0'], 0);
  assert.throws(() => em.write32(H.pio(PIO.CTRL), 1), (e) => e instanceof Refusal && /clk_sys/.test(e.message));
});
