// The harness's core-side fixes against rp2040js: an IRQ pended by software
// is no longer pending once taken (ARMv6-M), NVIC_ICPR clears it, a line
// still asserted keeps it pending, and exception entry takes 15 cycles.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Emulator } from '../lib/emulator.mjs';

const NVIC_ISER = 0xe000e100;
const NVIC_ISPR = 0xe000e200;
const NVIC_ICPR = 0xe000e280;
const SPI0_IRQ = 18;
const UART1_IRQ = 21;

/** Thread code `b .` at 0x10000200; every IRQ handler `b .` at 0x10000210. */
function spinning() {
  const em = new Emulator({ log: () => {} });
  const flash = new DataView(em.mcu.flash.buffer);
  const at = (address, value) => flash.setUint32(address - 0x10000000, value, true);
  at(0x10000100, 0x20001000);
  at(0x10000104, 0x10000201);
  for (let irq = 0; irq < 32; irq++) at(0x10000100 + 4 * (16 + irq), 0x10000211);
  flash.setUint16(0x200, 0xe7fe, true);
  flash.setUint16(0x210, 0xe7fe, true);
  em.boot();
  em.runCycles(10);
  return em;
}

test('an IRQ pended by software (NVIC_ISPR) is not pending once its handler runs', () => {
  const em = spinning();
  em.write32(NVIC_ISER, 1 << SPI0_IRQ);
  em.write32(NVIC_ISPR, 1 << SPI0_IRQ);
  em.runCycles(40);
  assert.equal(em.core.IPSR, 16 + SPI0_IRQ, 'in the handler');
  assert.equal(em.core.pendingInterrupts & (1 << SPI0_IRQ), 0, 'and no longer pending');
  assert.equal(em.exceptions, 1);
});

test('NVIC_ICPR clears a software-pended IRQ, not one whose line is asserted', () => {
  const em = spinning();
  em.write32(NVIC_ISPR, 1 << SPI0_IRQ);
  em.write32(NVIC_ICPR, 1 << SPI0_IRQ);
  assert.equal(em.core.pendingInterrupts & (1 << SPI0_IRQ), 0);
  em.mcu.setInterrupt(UART1_IRQ, true); // a peripheral asserts its line
  em.write32(NVIC_ICPR, 1 << UART1_IRQ);
  assert.ok(em.core.pendingInterrupts & (1 << UART1_IRQ), 'the line pends it again');
  em.write32(NVIC_ISER, 1 << UART1_IRQ);
  em.runCycles(40);
  assert.equal(em.core.IPSR, 16 + UART1_IRQ);
  assert.ok(em.core.pendingInterrupts & (1 << UART1_IRQ), 'still pending while its line is asserted');
});

test('exception entry takes 15 cycles before the handler runs (rp2040js: none)', () => {
  const em = spinning();
  em.write32(NVIC_ISER, 1 << SPI0_IRQ);
  const coreCycles = em.core.cycles;
  const cycles = em.cycles;
  em.write32(NVIC_ISPR, 1 << SPI0_IRQ);
  em.runCycles(15);
  assert.equal(em.core.IPSR, 16 + SPI0_IRQ);
  assert.equal(em.cycles - cycles, 15);
  assert.equal(em.core.cycles, coreCycles, 'no instruction ran during the entry');
  em.runCycles(1);
  assert.ok(em.core.cycles > coreCycles, 'then the handler');
});
