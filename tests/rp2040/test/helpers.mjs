// PIO0 programmed from JS through its registers, as the firmware will:
// the programs of the firmware contract (clock, edge capture) and a
// stimulus program built from the instructions the contract names.

import { assemble } from '../lib/pio-asm.mjs';
import { Emulator, IO_BANK0_BASE, PIO, PIO0_BASE } from '../lib/emulator.mjs';

export const FUNCSEL_PIO0 = 6;
export const FUNCSEL_UART = 2;

/** SM0 "clock" at 0..3 (wrap 0..3): pushes X, X decrements once per 2 cycles. */
export const CLOCK = ['in x, 32', 'push noblock', 'jmp x-- 3', 'jmp x-- 0'];

/**
 * The edge program at 4..15 (wrap 14..15), for SM1/SM2: pushes X on each
 * rising edge (at 4) and each falling edge (at 10) of the JMP_PIN.
 */
export const EDGE = [
  'in x, 32', // 4: rising edge seen
  'push noblock',
  'jmp x-- 7',
  'jmp x-- 8',
  'jmp x-- 9', // 8: while high
  'jmp pin 8',
  'in x, 32', // 10: falling edge seen
  'push noblock',
  'jmp x-- 13',
  'jmp x-- 14',
  'jmp x-- 15', // 14: while low (wrap 14..15)
  'jmp pin 4',
];
export const EDGE_ENTRY_LOW = 14;

/**
 * A stimulus program at 16..31 (wrap 16..31) from the contract's
 * instructions; each aligned pair of cycles holds exactly one `jmp x--`, so
 * its X follows SM0's. The CPU writes a time (an X value) to TXF3; when X
 * reaches it the pin (OUT_BASE, 1 pin) toggles and IRQ flag (0 rel) is set.
 */
export const STIMULUS = [
  'jmp x-- 17', // 16
  'mov y, ~status', // 17: y = 0 when the TX FIFO is empty (STATUS_SEL 0, STATUS_N 1)
  'jmp x-- 19', // 18
  'jmp !y 16', // 19: nothing scheduled: keep counting
  'pull noblock', // 20
  'jmp x-- 22', // 21
  'mov y, osr', // 22
  'jmp x-- 24', // 23
  'jmp x-- 25', // 24: wait for X == Y
  'jmp x!=y 24', // 25
  'mov isr, ~isr', // 26
  'jmp x-- 28', // 27
  'mov pins, isr', // 28: the edge
  'jmp x-- 30', // 29
  'irq nowait 0 rel', // 30
  'jmp x-- 16', // 31
];
export const STIMULUS_ENTRY = 16;

export const sm = (n, reg) => PIO0_BASE + reg + n * PIO.SM_STRIDE;
export const pio = (reg) => PIO0_BASE + reg;

export function execctrl({ wrapTop, wrapBottom, jmpPin = 0, statusSel = 0, statusN = 0 }) {
  return ((jmpPin & 0x1f) << 24) | ((wrapTop & 0x1f) << 12) | ((wrapBottom & 0x1f) << 7) | (statusSel << 4) | statusN;
}
export function pinctrl({ outBase = 0, outCount = 0, setBase = 0, setCount = 0, sideSetCount = 0 }) {
  return ((sideSetCount & 7) << 29) | ((setCount & 7) << 26) | ((outCount & 0x3f) << 20) | ((setBase & 0x1f) << 5) | (outBase & 0x1f);
}
export const SHIFTCTRL_DEFAULT = 0x000c0000;
export const FJOIN_RX = 1 << 31;

export function newEmulator(options = {}) {
  const lines = [];
  const emulator = new Emulator({ log: (line) => lines.push(line), ...options });
  emulator.haltCore();
  emulator.logLines = lines;
  return emulator;
}

export function load(emulator, program, at) {
  assemble(program).forEach((word, i) => emulator.write32(pio(PIO.INSTR_MEM0 + 4 * (at + i)), word));
}

export function exec(emulator, n, line) {
  emulator.write32(sm(n, PIO.SM0_INSTR), assemble([line])[0]);
}

export function funcsel(emulator, pin, fn) {
  emulator.write32(IO_BANK0_BASE + 8 * pin + 4, fn);
}

export function rxAll(emulator, n) {
  const out = [];
  while (!(emulator.read32(pio(PIO.FSTAT)) & (1 << (8 + n)))) out.push(emulator.read32(pio(PIO.RXF0 + 4 * n)));
  return out;
}

/**
 * The firmware's PIO set-up: all 32 instructions, SM0 clock, SM1 edge
 * capture on `responsePin`, SM2 edge capture on `txPin`, SM3 stimulus on GP2;
 * X = ~0 and ISR = 0 by SMx_INSTR, SET PINDIRS on SM3, the entry jumps, then
 * one CTRL write enabling SMs 0..3 with SM_RESTART and CLKDIV_RESTART.
 */
export function firmwareSetup(emulator, { responsePin = 3, txPin = 4, start = true } = {}) {
  load(emulator, CLOCK, 0);
  load(emulator, EDGE, 4);
  load(emulator, STIMULUS, 16);
  funcsel(emulator, 2, FUNCSEL_PIO0);
  funcsel(emulator, responsePin, FUNCSEL_PIO0);
  emulator.write32(sm(0, PIO.SM0_EXECCTRL), execctrl({ wrapTop: 3, wrapBottom: 0 }));
  for (const [n, pin] of [
    [1, responsePin],
    [2, txPin],
  ]) {
    emulator.write32(sm(n, PIO.SM0_EXECCTRL), execctrl({ wrapTop: 15, wrapBottom: 14, jmpPin: pin }));
    emulator.write32(sm(n, PIO.SM0_SHIFTCTRL), SHIFTCTRL_DEFAULT | FJOIN_RX);
  }
  emulator.write32(sm(3, PIO.SM0_EXECCTRL), execctrl({ wrapTop: 31, wrapBottom: 16, statusSel: 0, statusN: 1 }));
  emulator.write32(sm(3, PIO.SM0_PINCTRL), pinctrl({ outBase: 2, outCount: 1, setBase: 2, setCount: 1 }));
  for (let n = 0; n < 4; n++) {
    exec(emulator, n, 'mov x, ~null');
    exec(emulator, n, 'mov isr, null');
  }
  exec(emulator, 3, 'set pindirs, 1');
  exec(emulator, 0, 'jmp 0');
  exec(emulator, 1, `jmp ${EDGE_ENTRY_LOW}`);
  exec(emulator, 2, `jmp ${EDGE_ENTRY_LOW}`);
  exec(emulator, 3, `jmp ${STIMULUS_ENTRY}`);
  if (start) enableAll(emulator);
}

export function enableAll(emulator) {
  emulator.write32(pio(PIO.CTRL), 0xf | (0xf << 4) | (0xf << 8));
}
