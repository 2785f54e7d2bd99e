// The Pico's QSPI flash as the firmware reaches it outside XIP: the XIP_SSI
// registers (RP2040 datasheet 4.10.13), IO_QSPI's GPIO_QSPI_SS_CTRL
// (2.19.6.2, the chip select's OUTOVER), and a serial flash chip that
// answers the Read Unique ID command (0x4B, 4 dummy bytes, 8 ID bytes: the
// W25Q16JV's, the command pico-sdk's flash_get_unique_id sends). rp2040js
// has only a stub SSI (every SR bit set, DR0 reads back 0) and no IO_QSPI.
//
// The XIP window (0x10000000..0x13ffffff) works only while the SSI is in
// its XIP mode (enabled, TMOD EEPROM_READ, 32-bit frames, as boot2 and the
// boot ROM's flash_enter_cmd_xip leave it), the chip select is the SSI's
// (OUTOVER normal) and the chip is not in the middle of a command: any
// instruction fetch or core data read there otherwise refuses the run
// (silicon would read garbage or hang the bus). The state after boot is
// boot2's (W25Q080: quad continuous read).
//
// Serial transfers: a byte written to DR0 in TX_AND_RX mode with 8-bit
// frames is shifted out when the shifter is free and takes 8 SCK periods
// (BAUDR clk_sys cycles each); its answer enters the RX FIFO when it is
// done. SR (BUSY, TFNF, TFE, RFNE, RFF), TXFLR and RXFLR follow that
// timeline, so a firmware that reads DR0 before RFNE, overflows a FIFO or
// moves the chip select while a byte is still shifting is refused (each
// would lose or corrupt data on silicon).

import { BasePeripheral } from 'rp2040js';

export const XIP_SSI_BASE = 0x18000000;
export const IO_QSPI_BASE = 0x40018000;
export const FLASH_RUID_CMD = 0x4b;
export const FLASH_RUID_DUMMY_BYTES = 4;
export const FLASH_RUID_DATA_BYTES = 8;
/** The unique ID the model answers unless told otherwise (run.mjs --flash-unique-id). */
export const DEFAULT_UNIQUE_ID = 'E6614C311B2A3D21';

// XIP_SSI registers (datasheet 4.10.13).
export const SSI = {
  CTRLR0: 0x00,
  CTRLR1: 0x04,
  SSIENR: 0x08,
  SER: 0x10,
  BAUDR: 0x14,
  TXFLR: 0x20,
  RXFLR: 0x24,
  SR: 0x28,
  ICR: 0x48,
  DR0: 0x60,
  SPI_CTRLR0: 0xf4,
};
export const SR_BUSY = 1 << 0;
export const SR_TFNF = 1 << 1;
export const SR_TFE = 1 << 2;
export const SR_RFNE = 1 << 3;
export const SR_RFF = 1 << 4;
const FIFO_DEPTH = 16;
const TMOD_TX_AND_RX = 0;
const TMOD_EEPROM_READ = 3;

/** IO_QSPI GPIO_QSPI_SS_CTRL (2.19.6.2): OUTOVER bits 9:8 (0 normal, 1 invert, 2 low, 3 high), FUNCSEL 4:0. */
export const GPIO_QSPI_SS_CTRL = 0x0c;
export const OUTOVER_NORMAL = 0;
export const OUTOVER_LOW = 2;
export const OUTOVER_HIGH = 3;
const QSPI_PINS = 6; // SCLK, SS, SD0..SD3: STATUS at 8n, CTRL at 8n + 4

/** CTRLR0 as boot2 (W25Q080) leaves it: quad frames (SPI_FRF 2), 32-bit frames, TMOD EEPROM_READ. */
const BOOT2_CTRLR0 = (2 << 21) | (31 << 16) | (TMOD_EEPROM_READ << 8);

function hex(value, digits = 2) {
  return `0x${(value >>> 0).toString(16).padStart(digits, '0')}`;
}

/** `HEX16` (16 hex digits, the ID's bytes in the order the flash sends them) as 8 bytes. */
export function parseUniqueId(text) {
  if (typeof text !== 'string' || !/^[0-9a-fA-F]{16}$/.test(text)) {
    throw new Error(`flash unique ID ${JSON.stringify(text)}: 16 hex digits`);
  }
  const id = new Uint8Array(FLASH_RUID_DATA_BYTES);
  for (let i = 0; i < id.length; i++) id[i] = parseInt(text.slice(2 * i, 2 * i + 2), 16);
  return id;
}

/** The flash chip behind the chip select: Read Unique ID only; any other command refuses. */
export class FlashChip {
  constructor(uniqueId, refuse) {
    this.uniqueId = uniqueId;
    this.refuse = refuse;
    /** Boot2 (W25Q080) leaves the chip in quad continuous-read mode: the first bytes would be an address. */
    this.continuousRead = true;
    this.selected = false;
    this.index = 0;
    this.command = -1;
    /** Every command the chip was given, in order (for tests). */
    this.commands = [];
  }

  select() {
    if (this.selected) return;
    this.selected = true;
    this.index = 0;
    this.command = -1;
  }

  deselect() {
    this.selected = false;
  }

  /** One byte in on DI while selected; returns the byte the chip drives on DO (0xff: not driven). */
  transfer(byte) {
    if (!this.selected) return 0xff;
    const i = this.index++;
    if (i === 0) {
      if (this.continuousRead) {
        this.refuse(
          `a serial flash command (${hex(byte)}) while the flash is still in continuous-read (XIP) mode: ` +
            'the boot ROM function flash_exit_xip must run first',
        );
      }
      this.command = byte;
      this.commands.push(byte);
      if (byte !== FLASH_RUID_CMD) {
        this.refuse(`flash command ${hex(byte)}: not modelled (the model answers Read Unique ID, 0x4B, only)`);
      }
      return 0xff;
    }
    const at = i - 1 - FLASH_RUID_DUMMY_BYTES;
    return at >= 0 && at < FLASH_RUID_DATA_BYTES ? this.uniqueId[at] : 0xff;
  }
}

/** IO_QSPI: the six QSPI pins' CTRL registers (FUNCSEL 0 is XIP); OUTOVER of SS is the chip select's. */
class IoQspi extends BasePeripheral {
  constructor(rp2040, flash) {
    super(rp2040, 'IO_QSPI_BASE');
    this.flash = flash;
    // As the boot ROM's connect_internal_flash leaves them: every pin on the XIP block (FUNCSEL 0).
    this.ctrl = new Uint32Array(QSPI_PINS);
  }
  readUint32(offset) {
    if (offset < 8 * QSPI_PINS && offset & 4) return this.ctrl[offset >> 3];
    if (offset < 8 * QSPI_PINS) return 0;
    return super.readUint32(offset);
  }
  writeUint32(offset, value) {
    if (offset < 8 * QSPI_PINS && offset & 4) {
      this.flash.setCtrl(offset >> 3, value >>> 0);
      return;
    }
    super.writeUint32(offset, value);
  }
}

/** XIP_SSI with its FIFOs on a timeline (see the file's comment). */
class Ssi extends BasePeripheral {
  constructor(rp2040, flash) {
    super(rp2040, 'SSI');
    this.flash = flash;
    this.ctrlr0 = BOOT2_CTRLR0;
    this.ctrlr1 = 0;
    this.ssienr = 1;
    this.ser = 1;
    this.baudr = 2;
    this.spiCtrlr0 = 0;
  }
  readUint32(offset) {
    const f = this.flash;
    switch (offset) {
      case SSI.CTRLR0:
        return this.ctrlr0;
      case SSI.CTRLR1:
        return this.ctrlr1;
      case SSI.SSIENR:
        return this.ssienr;
      case SSI.SER:
        return this.ser;
      case SSI.BAUDR:
        return this.baudr;
      case SSI.SPI_CTRLR0:
        return this.spiCtrlr0;
      case SSI.TXFLR:
        return f.txLevel();
      case SSI.RXFLR:
        return f.rxLevel();
      case SSI.SR:
        return f.status();
      case SSI.ICR:
        return 0;
      case SSI.DR0:
        return f.readData();
      default:
        return 0;
    }
  }
  writeUint32(offset, value) {
    const f = this.flash;
    switch (offset) {
      case SSI.DR0:
        f.writeData(value);
        return;
      case SSI.SSIENR:
        // Disabling the SSI flushes its FIFOs (4.10.13 SSIENR).
        f.checkIdle('SSIENR written');
        this.ssienr = value & 1;
        if (!this.ssienr) f.flushFifos();
        break;
      case SSI.CTRLR0:
        this.ctrlr0 = value >>> 0;
        break;
      case SSI.CTRLR1:
        this.ctrlr1 = value >>> 0;
        break;
      case SSI.SER:
        this.ser = value & 1;
        break;
      case SSI.BAUDR:
        this.baudr = value & 0xffff;
        break;
      case SSI.SPI_CTRLR0:
        this.spiCtrlr0 = value >>> 0;
        break;
      default:
        return;
    }
    f.updateXip();
  }
}

/**
 * The flash side of the chip: installs the SSI and IO_QSPI models in place
 * of rp2040js's, and guards the XIP window.
 */
export class QspiFlash {
  /**
   * @param {import('./emulator.mjs').Emulator} emulator
   * @param {object} [options]
   * @param {string} [options.uniqueId] 16 hex digits (DEFAULT_UNIQUE_ID)
   */
  constructor(emulator, { uniqueId = DEFAULT_UNIQUE_ID } = {}) {
    this.emulator = emulator;
    const mcu = emulator.mcu;
    this.chip = new FlashChip(parseUniqueId(uniqueId), (m) => emulator.refuse(m));
    this.ssi = new Ssi(mcu, this);
    this.io = new IoQspi(mcu, this);
    mcu.peripherals[XIP_SSI_BASE >>> 12] = this.ssi;
    mcu.peripherals[IO_QSPI_BASE >>> 12] = this.io;
    /** Bytes written to DR0 not yet read back: {startNs, doneNs, rx}. */
    this.inFlight = [];
    this.lastDoneNs = -Infinity;
    /** XIP usable: the window's fetches and reads work. */
    this.xipReady = true;
    this.xipWhy = '';
    this.savedReads = null;
    this.updateXip();
  }

  // ---- the chip select ----------------------------------------------------

  get outover() {
    return (this.io.ctrl[1] >>> 8) & 3;
  }

  setCtrl(pin, value) {
    const before = this.io.ctrl[pin];
    if (before === value) return;
    this.checkIdle(`IO_QSPI GPIO${pin}_CTRL written`);
    this.io.ctrl[pin] = value;
    if (pin === 1) {
      const over = (value >>> 8) & 3;
      if (over === 1) this.emulator.refuse('IO_QSPI GPIO_QSPI_SS_CTRL OUTOVER invert: not modelled');
      if (over === OUTOVER_LOW) this.chip.select();
      else this.chip.deselect();
    }
    this.updateXip();
  }

  // ---- serial transfers ----------------------------------------------------

  /** One 8-bit frame's time on the wire: 8 SCK periods of BAUDR clk_sys cycles. */
  byteNs() {
    return 8 * this.ssi.baudr * this.emulator.cycleNs;
  }

  /** A change that would corrupt a byte still shifting or waiting: refused. */
  checkIdle(what) {
    const now = this.emulator.nowNs;
    const busy = this.inFlight.some((b) => b.doneNs > now);
    if (busy) {
      this.emulator.refuse(
        `${what} at ${now} ns while the SSI is still shifting a byte: on silicon the transfer would be cut ` +
          '(wait for SR.BUSY clear, or for every byte in the RX FIFO)',
      );
    }
  }

  flushFifos() {
    this.inFlight = [];
  }

  writeData(value) {
    const { ssi, emulator, chip } = this;
    const tmod = (ssi.ctrlr0 >>> 8) & 3;
    const dfs = (ssi.ctrlr0 >>> 16) & 31;
    const frf = (ssi.ctrlr0 >>> 21) & 3;
    if (!ssi.ssienr || tmod !== TMOD_TX_AND_RX || dfs !== 7 || frf !== 0) {
      emulator.refuse(
        `XIP_SSI DR0 written with SSIENR ${ssi.ssienr}, CTRLR0 ${hex(ssi.ctrlr0, 8)}: the model shifts 8-bit ` +
          'standard-SPI TX_AND_RX frames only (as the boot ROM function flash_exit_xip sets the SSI up)',
      );
    }
    if (ssi.baudr < 2 || ssi.baudr & 1) emulator.refuse(`XIP_SSI BAUDR ${ssi.baudr}: SCKDV must be even and at least 2`);
    if (this.txLevel() >= FIFO_DEPTH) emulator.refuse('XIP_SSI DR0 written with the TX FIFO full: the byte is lost on silicon');
    const ctrl = this.io.ctrl;
    if ((ctrl[0] & 0x1f) !== 0 || (ctrl[1] & 0x1f) !== 0 || (ctrl[2] & 0x1f) !== 0 || (ctrl[3] & 0x1f) !== 0) {
      emulator.refuse('an SSI transfer with the QSPI pins not on the XIP block (FUNCSEL): call connect_internal_flash');
    }
    const now = emulator.nowNs;
    const startNs = Math.max(now, this.lastDoneNs);
    // OUTOVER normal: the SSI drives the chip select, low only while its TX FIFO has data
    // (4.10.8): a gap between bytes ends the command.
    if (this.outover === OUTOVER_NORMAL) {
      if (startNs > this.lastDoneNs) chip.deselect();
      if (ssi.ser) chip.select();
    }
    const rx = chip.transfer(value & 0xff);
    const doneNs = startNs + this.byteNs();
    this.lastDoneNs = doneNs;
    this.inFlight.push({ startNs, doneNs, rx });
    if (this.completed(doneNs) > FIFO_DEPTH) {
      emulator.refuse(
        'XIP_SSI RX FIFO overflow: more than 16 bytes in flight not read back (on silicon the excess is lost, ' +
          'RXO): keep at most 14 in flight, as pico-sdk and the boot ROM do',
      );
    }
  }

  completed(ns) {
    let n = 0;
    for (const b of this.inFlight) if (b.doneNs <= ns) n++;
    return n;
  }

  rxLevel() {
    return this.completed(this.emulator.nowNs);
  }

  txLevel() {
    const now = this.emulator.nowNs;
    let n = 0;
    for (const b of this.inFlight) if (b.startNs > now) n++;
    return n;
  }

  status() {
    const now = this.emulator.nowNs;
    const tx = this.txLevel();
    const rx = this.rxLevel();
    let sr = 0;
    if (this.inFlight.some((b) => b.doneNs > now)) sr |= SR_BUSY;
    if (tx < FIFO_DEPTH) sr |= SR_TFNF;
    if (tx === 0) sr |= SR_TFE;
    if (rx > 0) sr |= SR_RFNE;
    if (rx >= FIFO_DEPTH) sr |= SR_RFF;
    return sr;
  }

  readData() {
    const head = this.inFlight[0];
    if (!head || head.doneNs > this.emulator.nowNs) {
      this.emulator.refuse(
        'XIP_SSI DR0 read with the RX FIFO empty (underflow, RXU): the firmware must wait for SR.RFNE',
      );
    }
    this.inFlight.shift();
    return head.rx;
  }

  // ---- the boot ROM's flash functions (lib/bootrom.mjs) ---------------------

  /** connect_internal_flash: IO_QSPI reset, every pin's CTRL 0 (FUNCSEL XIP, no overrides). */
  connectInternalFlash() {
    this.checkIdle('connect_internal_flash');
    this.io.ctrl.fill(0);
    this.chip.deselect();
    this.updateXip();
  }

  /**
   * flash_exit_xip: the SSI to 8-bit TX_AND_RX serial frames at SCK /6
   * (the ROM's flash_init_spi), the chip out of continuous read, SS_CTRL 0.
   */
  exitXip() {
    const { ssi, io } = this;
    if ((io.ctrl[1] & 0x1f) !== 0) {
      this.emulator.refuse('flash_exit_xip with the QSPI pins not on the XIP block: call connect_internal_flash first');
    }
    this.checkIdle('flash_exit_xip');
    ssi.ssienr = 0;
    this.flushFifos();
    ssi.baudr = 6;
    ssi.ctrlr0 = (7 << 16) | (TMOD_TX_AND_RX << 8);
    ssi.ser = 1;
    ssi.ssienr = 1;
    this.chip.deselect();
    this.chip.continuousRead = false;
    io.ctrl[1] = 0;
    this.updateXip();
  }

  /** flash_flush_cache: XIP_CTRL FLUSH (the cache model emptied) and the chip select back to normal. */
  flushCache() {
    const cache = this.emulator.xip;
    if (cache) {
      cache.tags.fill(-1);
      cache.lastLine = -1;
    }
    this.setCtrl(1, this.io.ctrl[1] & ~(3 << 8));
  }

  /** flash_enter_cmd_xip: the SSI to XIP with serial 03h reads, 24-bit addresses. */
  enterCmdXip() {
    const { ssi } = this;
    this.checkIdle('flash_enter_cmd_xip');
    if (this.outover === OUTOVER_NORMAL) this.chip.deselect();
    ssi.ssienr = 0;
    this.flushFifos();
    ssi.ctrlr0 = (31 << 16) | (TMOD_EEPROM_READ << 8);
    ssi.spiCtrlr0 = (0x03 << 24) | (2 << 8) | (6 << 2);
    ssi.ssienr = 1;
    this.updateXip();
  }

  // ---- the XIP window --------------------------------------------------------

  /** Recomputes whether XIP works, and guards the core's reads of the window while it does not. */
  updateXip() {
    const { ssi } = this;
    let why = '';
    if (!ssi.ssienr) why = 'the SSI is disabled';
    else if (((ssi.ctrlr0 >>> 8) & 3) !== TMOD_EEPROM_READ || ((ssi.ctrlr0 >>> 16) & 31) !== 31) {
      why = 'the SSI is in serial mode (after flash_exit_xip, before flash_enter_cmd_xip)';
    } else if (this.outover !== OUTOVER_NORMAL) why = 'the chip select is forced (IO_QSPI GPIO_QSPI_SS_CTRL OUTOVER)';
    else if ((this.io.ctrl[1] & 0x1f) !== 0) why = 'the QSPI pins are not on the XIP block';
    this.xipWhy = why;
    this.xipReady = why === '';
    this.guardReads(!this.xipReady);
  }

  /** A fetch or read of the XIP window while XIP does not work: refused. */
  refuseXip(address, kind) {
    this.emulator.refuse(
      `${kind} at ${hex(address, 8)} in the XIP window while XIP is off (${this.xipWhy}): on silicon the flash ` +
        'is not readable then; code and data used between flash_exit_xip and flash_enter_cmd_xip must be in SRAM',
    );
  }

  /** While XIP is off, the core's data reads of the window refuse (instruction fetches: Emulator.runCycles). */
  guardReads(on) {
    const core = this.emulator.core;
    if (on && this.savedReads === null) {
      const saved = [core.readUint32, core.readUint16, core.readUint8];
      this.savedReads = saved;
      const guard = (read) => (address) => {
        if (address >= 0x10000000 && address < 0x14000000) this.refuseXip(address, 'a data read');
        return read.call(core, address);
      };
      core.readUint32 = guard(saved[0]);
      core.readUint16 = guard(saved[1]);
      core.readUint8 = guard(saved[2]);
    } else if (!on && this.savedReads !== null) {
      [core.readUint32, core.readUint16, core.readUint8] = this.savedReads;
      this.savedReads = null;
    }
  }
}
