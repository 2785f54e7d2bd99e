// The boot ROM shim (lib/bootrom.mjs) and the flash model (lib/flash.mjs):
// the ROM's tables and rom_table_lookup as rp2040-hal calls them, from
// Thumb code run by the core; pico-sdk's flash_get_unique_id sequence on
// the SSI and IO_QSPI registers; and the refusals (a code the shim lacks, a
// jump into the ROM, an XIP fetch or read while XIP is off, a DR0 read
// before RFNE, the chip select moved mid-byte). Without the shim every ROM
// call is refused; without the model DR0 reads rp2040js's stub's 0.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { romCode } from '../lib/bootrom.mjs';
import { Emulator, Refusal } from '../lib/emulator.mjs';
import { DEFAULT_UNIQUE_ID, GPIO_QSPI_SS_CTRL, IO_QSPI_BASE, SR_BUSY, SR_RFNE, SR_TFNF, SSI, XIP_SSI_BASE } from '../lib/flash.mjs';

// Thumb-1 encodings (ARMv6-M ARM A6.7).
const T = {
  movs: (rd, imm) => 0x2000 | (rd << 8) | imm,
  adds: (rdn, imm) => 0x3000 | (rdn << 8) | imm,
  addsReg: (rd, rn, rm) => 0x1800 | (rm << 6) | (rn << 3) | rd,
  lsls: (rd, rm, imm) => (imm << 6) | (rm << 3) | rd,
  ldrh: (rt, rn) => 0x8800 | (rn << 3) | rt,
  ldr: (rt, rn) => 0x6800 | (rn << 3) | rt,
  blx: (rm) => 0x4780 | (rm << 3),
  mov: (rd, rm) => 0x4600 | ((rd & 8) << 4) | (rm << 3) | (rd & 7),
  self: 0xe7fe, // b .
};
const SRAM_CODE = 0x20000100;
const FLASH_CODE_OFFSET = 0x1000;

/** r1 = a 16-bit value. */
const load16 = (rd, value) => [T.movs(rd, value >>> 8), T.lsls(rd, rd, 8), T.adds(rd, value & 0xff)];

/** As rp2040-hal's rom_data: r4 = rom_table_lookup(*(u16 *)table_ptr, code), then called if `call`. */
function lookup(code, { tablePtr = 0x14, call = true } = {}) {
  return [
    T.movs(3, 0x18),
    T.ldrh(3, 3), // the halfword at 0x18: rom_table_lookup
    T.movs(0, tablePtr),
    T.ldrh(0, 0), // the table's address
    ...load16(1, romCode(code)),
    T.blx(3),
    T.mov(4, 0),
    ...(call ? [T.blx(4)] : []),
  ];
}

/** An emulator running `code` from SRAM (the core's PC set there), with `flashCode` at XIP 0x10001000. */
function run(code, { flashCode = [], cycles = 4000, ...options } = {}) {
  const em = new Emulator({ log: () => {}, ...options });
  const sram = new DataView(em.mcu.sram.buffer);
  code.forEach((half, i) => sram.setUint16(SRAM_CODE - 0x20000000 + 2 * i, half, true));
  flashCode.forEach((half, i) => em.mcu.flashView.setUint16(FLASH_CODE_OFFSET + 2 * i, half, true));
  em.core.SP = 0x20002000;
  em.core.PC = SRAM_CODE;
  em.runCycles(cycles);
  return em;
}

const endsAt = (em, code) => em.core.PC === SRAM_CODE + 2 * (code.length - 1);

test('the boot ROM shim: the datasheet layout; rom_table_lookup, called as rp2040-hal does, finds IF, EX, FC and CX, and each stub returns', () => {
  for (const [code, name] of [
    ['IF', 'connect_internal_flash'],
    ['EX', 'flash_exit_xip'],
    ['FC', 'flash_flush_cache'],
    ['CX', 'flash_enter_cmd_xip'],
  ]) {
    const prog = [...lookup(code), T.movs(6, 1), T.self];
    const em = run(prog);
    assert.ok(endsAt(em, prog), `${code}: back from the ROM (PC 0x${em.core.PC.toString(16)})`);
    assert.equal(em.core.registers[6], 1);
    const fn = em.core.registers[4];
    assert.equal(fn & 1, 1, `${code}: a Thumb address`);
    assert.ok(fn < 0x4000, `${code}: in the ROM`);
    assert.deepEqual(em.bootrom.calls, [name]);
    assert.deepEqual(
      [0x10, 0x11, 0x12].map((a) => em.mcu.readUint8(a)),
      [0x4d, 0x75, 0x01],
      "the magic 'M' 'u' 1",
    );
  }
});

test("a lookup of a function or data code the shim does not provide refuses the run, naming the code", () => {
  assert.throws(() => run([...lookup('RE'), T.self]), (e) => e instanceof Refusal && /function 'RE'/.test(e.message));
  assert.throws(
    () => run([...lookup('CR', { tablePtr: 0x16, call: false }), T.self]),
    (e) => e instanceof Refusal && /data 'CR'/.test(e.message),
  );
});

test('a jump into the ROM outside the shim\'s code refuses the run', () => {
  assert.throws(() => run([T.movs(0, 0x41), T.blx(0), T.self]), (e) => e instanceof Refusal && /jumped to 0x40/.test(e.message));
});

/** pico-sdk's flash_cs_force: hw_write_masked through the XOR alias (2.1.2). */
function csForce(em, high) {
  const value = (high ? 3 : 2) << 8;
  const now = em.read32(IO_QSPI_BASE + GPIO_QSPI_SS_CTRL);
  em.write32(IO_QSPI_BASE + 0x1000 + GPIO_QSPI_SS_CTRL, (now ^ value) & 0x300);
}

/** pico-sdk's flash_do_cmd_internal transfer loop on the registers, a cycle a pass. */
function transfer(em, tx) {
  const rx = [];
  let sent = 0;
  let busySeen = false;
  while (sent < tx.length || rx.length < tx.length) {
    const sr = em.read32(XIP_SSI_BASE + SSI.SR);
    busySeen ||= (sr & SR_BUSY) !== 0;
    if (sr & SR_TFNF && sent < tx.length && sent - rx.length < 14) em.write32(XIP_SSI_BASE + SSI.DR0, tx[sent++]);
    if (sr & SR_RFNE && rx.length < tx.length) rx.push(em.read32(XIP_SSI_BASE + SSI.DR0));
    em.runCycles(1);
  }
  return { rx, busySeen };
}

function readUniqueId(em) {
  em.flash.connectInternalFlash();
  em.flash.exitXip();
  assert.equal(em.flash.xipReady, false, 'XIP off after flash_exit_xip');
  csForce(em, false);
  const tx = [0x4b, ...new Array(12).fill(0)];
  const { rx, busySeen } = transfer(em, tx);
  csForce(em, true);
  em.flash.flushCache();
  em.flash.enterCmdXip();
  return { id: rx.slice(5).map((b) => b.toString(16).padStart(2, '0')).join('').toUpperCase(), busySeen };
}

test("pico-sdk's flash_get_unique_id sequence reads the ID the model is given (and the default without one), at SCK /6", () => {
  const em = new Emulator({ log: () => {}, flashUniqueId: '0123456789abcdef' });
  em.haltCore();
  const { id, busySeen } = readUniqueId(em);
  assert.equal(id, '0123456789ABCDEF');
  assert.ok(busySeen, 'the bytes take time on the wire');
  assert.deepEqual(em.flash.chip.commands, [0x4b]);
  assert.equal(em.flash.xipReady, true, 'XIP back after flash_enter_cmd_xip');
  const other = new Emulator({ log: () => {} });
  other.haltCore();
  assert.equal(readUniqueId(other).id, DEFAULT_UNIQUE_ID);
});

test('one byte takes 8 SCK periods of BAUDR clk_sys cycles; DR0 read before RFNE refuses', () => {
  const em = new Emulator({ log: () => {} });
  em.haltCore();
  em.flash.exitXip();
  csForce(em, false);
  em.write32(XIP_SSI_BASE + SSI.DR0, 0x4b);
  assert.equal(em.read32(XIP_SSI_BASE + SSI.SR) & (SR_BUSY | SR_RFNE), SR_BUSY);
  em.runCycles(47);
  assert.equal(em.read32(XIP_SSI_BASE + SSI.SR) & SR_RFNE, 0, 'not after 47 cycles');
  em.runCycles(1);
  assert.equal(em.read32(XIP_SSI_BASE + SSI.SR) & (SR_BUSY | SR_RFNE), SR_RFNE, 'after 48 (8 × BAUDR 6)');
  em.read32(XIP_SSI_BASE + SSI.DR0);
  em.write32(XIP_SSI_BASE + SSI.DR0, 0);
  assert.throws(() => em.read32(XIP_SSI_BASE + SSI.DR0), (e) => e instanceof Refusal && /RFNE/.test(e.message));
});

test('the chip select moved while a byte shifts, and a command before flash_exit_xip, refuse the run', () => {
  const em = new Emulator({ log: () => {} });
  em.haltCore();
  em.flash.exitXip();
  csForce(em, false);
  em.write32(XIP_SSI_BASE + SSI.DR0, 0x4b);
  assert.throws(() => csForce(em, true), (e) => e instanceof Refusal && /still shifting/.test(e.message));
  const early = new Emulator({ log: () => {} });
  early.haltCore();
  csForce(early, false);
  assert.throws(() => early.write32(XIP_SSI_BASE + SSI.DR0, 0x4b), (e) => e instanceof Refusal && /flash_exit_xip/.test(e.message));
});

test('while XIP is off (after EX, before CX) a fetch or a data read of flash refuses; after CX code in flash runs', () => {
  const inFlash = [T.movs(6, 1), T.self];
  // r5 = 0x10000000 + 0x1001 (adds r5, r5, r0), then blx r5.
  const jumpToFlash = [T.movs(5, 1), T.lsls(5, 5, 28), ...load16(0, FLASH_CODE_OFFSET | 1), T.addsReg(5, 5, 0), T.blx(5)];
  assert.throws(
    () => run([...lookup('EX'), ...jumpToFlash, T.self], { flashCode: inFlash }),
    (e) => e instanceof Refusal && /instruction fetch at 0x10001000 .*XIP is off/.test(e.message),
  );
  const read = [T.movs(7, 1), T.lsls(7, 7, 28), T.ldr(0, 7), T.self];
  assert.throws(
    () => run([...lookup('EX'), ...read]),
    (e) => e instanceof Refusal && /data read at 0x10000000 .*XIP is off/.test(e.message),
  );
  const em = run([...lookup('EX'), ...lookup('FC'), ...lookup('CX'), ...read.slice(0, 3), ...jumpToFlash, T.self], {
    flashCode: inFlash,
  });
  assert.equal(em.core.registers[6], 1, 'the code in flash ran');
  assert.equal(em.core.PC, 0x10001002);
  assert.deepEqual(em.bootrom.calls, ['flash_exit_xip', 'flash_flush_cache', 'flash_enter_cmd_xip']);
});
