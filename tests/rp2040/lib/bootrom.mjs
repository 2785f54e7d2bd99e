// A boot ROM shim for rp2040js, which has no boot ROM image: the ROM's
// tables as the RP2040 datasheet lays them out (2.8.2, 2.8.3), a real Thumb
// rom_table_lookup, and a BKPT stub for each public function the harness
// carries out in JS. Only the flash functions pico-sdk's flash_do_cmd uses
// are provided (connect_internal_flash 'IF', flash_exit_xip 'EX',
// flash_flush_cache 'FC', flash_enter_cmd_xip 'CX', carried out on the
// flash model, lib/flash.mjs); a lookup of any other code refuses the run,
// and so does a jump into the ROM anywhere but its code.
//
// Layout (2.8.3 "Bootrom Contents", 2.8.2 in the edition rp2040-hal
// cites): 0x10 the magic 'M' 'u' 0x01 and at 0x13 the version; 0x14 a
// halfword pointer to the public function table, 0x16 to the public data
// table, 0x18 to rom_table_lookup (Thumb bit set). A table is pairs of
// halfwords (two-character code, first character in the low byte; pointer)
// ended by a zero code. rp2040-hal 0.12 (src/rom_data.rs) reads the
// halfword at 0x18 as the function's address, the one at 0x14 as the
// table's, and calls rom_table_lookup(table, u16::from_le_bytes(code)).
//
// Timing: each function takes the BKPT and BX LR's cycles only (on silicon
// flash_exit_xip alone takes tens of µs); the firmware calls them once, in
// init.

export const ROM_MAGIC = [0x4d, 0x75, 0x01]; // 'M', 'u', 1
/** Version 3: the B2 stepping's ROM (the Pico's). */
export const ROM_VERSION = 3;
export const ROM_FUNC_TABLE_PTR = 0x14;
export const ROM_DATA_TABLE_PTR = 0x16;
export const ROM_LOOKUP_PTR = 0x18;

const FUNC_TABLE = 0x100;
const DATA_TABLE = 0x180;
const LOOKUP = 0x200;
const STUBS = 0x240;
/** The ROM's code: rom_table_lookup and the stubs; a PC elsewhere below 0x10000000 is refused. */
export const ROM_CODE_START = LOOKUP;
const LOOKUP_MISS_BKPT = 0xa0;

/** Two-character code as rp2040-hal and pico-sdk pass it: first character in the low byte. */
export function romCode(name) {
  return name.charCodeAt(0) | (name.charCodeAt(1) << 8);
}

function codeName(code) {
  const a = code & 0xff;
  const b = (code >>> 8) & 0xff;
  const printable = (c) => c >= 0x20 && c < 0x7f;
  return printable(a) && printable(b) ? `'${String.fromCharCode(a, b)}'` : `0x${code.toString(16)}`;
}

/**
 * rom_table_lookup(table r0, code r1) -> r0 (Thumb-1, ARMv6-M ARM A6.7):
 *   loop: ldrh r2, [r0]; cmp r2, r1; beq found; adds r0, #4; cmp r2, #0; bne loop
 *         bkpt MISS (the harness refuses: no such code)
 *   found: ldrh r0, [r0, #2]; bx lr
 * The real ROM returns 0 for a missing code; the shim refuses instead, naming it.
 */
export const LOOKUP_CODE = [0x8802, 0x428a, 0xd003, 0x3004, 0x2a00, 0xd1f9, 0xbe00 | LOOKUP_MISS_BKPT, 0x8840, 0x4770];

/** The public functions the shim carries out, by code, and the flash model's method for each. */
const FUNCTIONS = [
  ['IF', 'connect_internal_flash', (flash) => flash.connectInternalFlash()],
  ['EX', 'flash_exit_xip', (flash) => flash.exitXip()],
  ['FC', 'flash_flush_cache', (flash) => flash.flushCache()],
  ['CX', 'flash_enter_cmd_xip', (flash) => flash.enterCmdXip()],
];

export class BootRom {
  /**
   * @param {import('./emulator.mjs').Emulator} emulator
   * @param {import('./flash.mjs').QspiFlash} flash
   */
  constructor(emulator, flash) {
    this.emulator = emulator;
    this.flash = flash;
    /** Every function called, by name, in order (for tests and the trace). */
    this.calls = [];
    const mcu = emulator.mcu;
    const rom = new DataView(mcu.bootrom.buffer, mcu.bootrom.byteOffset, mcu.bootrom.byteLength);
    ROM_MAGIC.forEach((b, i) => rom.setUint8(0x10 + i, b));
    rom.setUint8(0x13, ROM_VERSION);
    rom.setUint16(ROM_FUNC_TABLE_PTR, FUNC_TABLE, true);
    rom.setUint16(ROM_DATA_TABLE_PTR, DATA_TABLE, true);
    rom.setUint16(ROM_LOOKUP_PTR, LOOKUP | 1, true);
    LOOKUP_CODE.forEach((half, i) => rom.setUint16(LOOKUP + 2 * i, half, true));
    this.stubs = new Map();
    FUNCTIONS.forEach(([code, name, run], i) => {
      const at = STUBS + 4 * i;
      rom.setUint16(at, 0xbe00 | (i + 1), true); // bkpt #i+1
      rom.setUint16(at + 2, 0x4770, true); // bx lr
      rom.setUint16(FUNC_TABLE + 4 * i, romCode(code), true);
      rom.setUint16(FUNC_TABLE + 4 * i + 2, at | 1, true);
      this.stubs.set(at, { name, run });
    });
    rom.setUint16(FUNC_TABLE + 4 * FUNCTIONS.length, 0, true);
    // The data table: empty (its terminator); a lookup in it refuses.
    rom.setUint16(DATA_TABLE, 0, true);
    this.codeEnd = STUBS + 4 * FUNCTIONS.length;
    const previous = mcu.onBreak;
    mcu.onBreak = (imm) => this.onBreak(imm, previous);
  }

  /** Whether `pc` is in the shim's code (rom_table_lookup or a stub). */
  holds(pc) {
    return pc >= ROM_CODE_START && pc < this.codeEnd;
  }

  /** rp2040js calls this for BKPT and UDF, with the PC past the instruction. */
  onBreak(imm, previous) {
    const { core } = this.emulator;
    const at = (core.PC - 2) >>> 0;
    if (at === LOOKUP + 12 && imm === LOOKUP_MISS_BKPT) {
      const table = core.registers[0] >>> 0;
      const which = table >= DATA_TABLE && table < LOOKUP ? 'data' : 'function';
      this.emulator.refuse(
        `rom_table_lookup of ${which} ${codeName(core.registers[1] >>> 0)}: the boot ROM shim (lib/bootrom.mjs) ` +
          `provides only ${FUNCTIONS.map(([c, n]) => `'${c}' ${n}`).join(', ')}`,
      );
    }
    const stub = this.stubs.get(at);
    if (stub === undefined) {
      previous(imm);
      return;
    }
    this.calls.push(stub.name);
    this.emulator.trace?.(`boot ROM: ${stub.name} at ${this.emulator.nowNs} ns`);
    stub.run(this.flash);
  }
}
