// rp2040js 1.4.1 with the core and PIO in lockstep, simulated time in exact
// nanoseconds, and the patches GAPS.md lists. Everything that reaches the
// emulated chip from outside (a target's edges, USB bytes) is an event at an
// exact simulated nanosecond, applied between two PIO steps.
//
// Time: cycle c of the core spans [c * 8 ns, (c + 1) * 8 ns) once clk_sys is
// 125 MHz. For each core cycle the loop (1) applies the events due at or
// before the cycle's start, (2) steps every enabled state machine once,
// (3) lets the GPIO see what PIO drove (listeners fire here, at the cycle's
// start time), then advances time by one cycle. A core instruction of n
// cycles takes effect before the first of its n PIO steps.

import { GPIOPin, RP2040, StateMachine } from 'rp2040js';
import { BootRom } from './bootrom.mjs';
import { DEFAULT_UNIQUE_ID, QspiFlash } from './flash.mjs';
import { describe } from './pio-asm.mjs';
import { routeDataReads, XipCache } from './xip-cache.mjs';

export class Refusal extends Error {
  constructor(message) {
    super(message);
    this.name = 'Refusal';
  }
}

export const REQUIRED_CLK_SYS_HZ = 125_000_000;
export const CYCLE_NS = 8;
/** One tick of the firmware's PIO time base: two system clocks. */
export const PIO_TICK_NS = 16;
/**
 * Cortex-M0+ exception entry with zero-wait-state memory (ARM DDI 0484C,
 * "interrupt latency"): 15 cycles. rp2040js stacks in zero cycles.
 */
export const EXCEPTION_ENTRY_CYCLES = 15;

export const PIO0_BASE = 0x50200000;
export const PIO1_BASE = 0x50300000;
export const IO_BANK0_BASE = 0x40014000;
export const PADS_BANK0_BASE = 0x4001c000;
/** pads_bank0 GPIOn reset value on silicon: IE | DRIVE 4 mA | PDE | SCHMITT. */
export const PAD_RESET_SILICON = 0x56;
export const WATCHDOG_BASE = 0x40058000;
/** XIP flash and its aliases (cached, NOALLOC, NOCACHE, NOCACHE_NOALLOC): datasheet 2.6.3.1. */
export const XIP_BASE = 0x10000000;
export const XIP_END = 0x14000000;
export const SRAM_BASE = 0x20000000;
/** SIO GPIO_IN offset (datasheet 2.3.1.7). */
const SIO_GPIO_IN = 0x004;
const BANK0_PINS = 30;

// PIO register offsets (datasheet 3.7).
export const PIO = {
  CTRL: 0x000,
  FSTAT: 0x004,
  FDEBUG: 0x008,
  FLEVEL: 0x00c,
  TXF0: 0x010,
  RXF0: 0x020,
  IRQ: 0x030,
  IRQ_FORCE: 0x034,
  INPUT_SYNC_BYPASS: 0x038,
  INSTR_MEM0: 0x048,
  SM0_CLKDIV: 0x0c8,
  SM0_EXECCTRL: 0x0cc,
  SM0_SHIFTCTRL: 0x0d0,
  SM0_ADDR: 0x0d4,
  SM0_INSTR: 0x0d8,
  SM0_PINCTRL: 0x0dc,
  SM_STRIDE: 0x18,
  INTR: 0x128,
  IRQ0_INTE: 0x12c,
  IRQ0_INTS: 0x134,
};

const FDEBUG_TXSTALL = 1 << 24;
const FDEBUG_RXSTALL = 1 << 0;
const SHIFTCTRL_FJOIN_TX = 1 << 30;
const SHIFTCTRL_FJOIN_RX = 1 << 31;
const EXECCTRL_SIDE_EN = 1 << 30;
// rp2040js's WaitType values (not exported by the package).
const WAIT_RX_FIFO = 2;
const WAIT_TX_FIFO = 3;
const WAIT_OUT = 5;

/** A min-heap of events keyed by simulated time, first-scheduled first among equals. */
class EventQueue {
  constructor() {
    this.heap = [];
    this.seq = 0;
  }
  get nextNs() {
    return this.heap.length ? this.heap[0].ns : Infinity;
  }
  push(ns, fn) {
    const item = { ns, seq: this.seq++, fn };
    const h = this.heap;
    h.push(item);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (less(h[p], h[i])) break;
      [h[p], h[i]] = [h[i], h[p]];
      i = p;
    }
  }
  pop() {
    const h = this.heap;
    const top = h[0];
    const last = h.pop();
    if (h.length) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && less(h[l], h[m])) m = l;
        if (r < h.length && less(h[r], h[m])) m = r;
        if (m === i) break;
        [h[m], h[i]] = [h[i], h[m]];
        i = m;
      }
    }
    return top;
  }
}
function less(a, b) {
  return a.ns < b.ns || (a.ns === b.ns && a.seq < b.seq);
}

function applyOverride(value, type) {
  switch (type) {
    case 1:
      return !value;
    case 2:
      return false;
    case 3:
      return true;
    default:
      return value;
  }
}

function quietLogger(verbose, write) {
  const out = (level) => (component, message) => write(`rp2040js ${level} ${component}: ${message}`);
  return {
    debug: verbose ? out('debug') : () => {},
    info: verbose ? out('info') : () => {},
    warn: out('warn'),
    error: out('error'),
  };
}

/**
 * Gap: in rp2040js a pin's input is only what `setInputValue` gave it; on
 * silicon the input buffer reads the pad, which an enabled output drives.
 * Here an output-enabled pin reads back its driven level (after OUTOVER),
 * through input enable and INOVER as before. The value is kept in `_input`,
 * recomputed whenever rp2040js re-evaluates a pin (checkForUpdates: on
 * IO_BANK0 CTRL, pad, SIO, PIO and PWM changes) or its input is set.
 */
let gpioPatched = false;
function patchGpioPrototype() {
  if (gpioPatched) return;
  gpioPatched = true;
  const proto = GPIOPin.prototype;
  const checkForUpdates = proto.checkForUpdates;
  const setInputValue = proto.setInputValue;
  proto.updateInput = function updateInput() {
    const level = this.outputEnable ? this.outputValue : this.rawInputValue;
    const input = applyOverride(level && this.inputEnable, this.inputOverride);
    this._input = input;
    // Bank 0's levels as one word, for the input synchronisers (--input-sync-clocks).
    if (this._bank0) {
      const rp = this.rp2040;
      rp._padBits = input ? rp._padBits | (1 << this.index) : rp._padBits & ~(1 << this.index);
    }
  };
  Object.defineProperty(proto, 'inputValue', {
    configurable: true,
    get() {
      return this._input;
    },
  });
  proto.checkForUpdates = function patchedCheckForUpdates() {
    this.updateInput();
    checkForUpdates.call(this);
  };
  proto.setInputValue = function patchedSetInputValue(value) {
    this.rawInputValue = value;
    this.updateInput();
    setInputValue.call(this, value);
  };
}

/** The bank 0 levels a state machine's PIO block sees: through its synchronisers, or bypassed. */
function pinsSeenBy(sm) {
  const rp = sm.rp2040;
  const bypass = sm.pio.inputSyncBypass;
  return (rp._syncedBits & ~bypass) | (rp._padBits & bypass);
}

/**
 * Gap: rp2040js's PIO reads a pad in the cycle it changes; silicon's PIO
 * inputs pass a 2-flop synchroniser unless the pin's INPUT_SYNC_BYPASS bit
 * is set in that block (datasheet 3.5.6.3). rp2040js reads pin levels for
 * `jmp pin` (jmpCondition 0b110) and for `in pins`/`mov x, pins`/`jmp`
 * on pins (the `inPins` getter, from rp2040.gpioValues); `wait` (checkWait)
 * is refused by the harness. With a synchroniser depth (rp2040._syncDepth)
 * both read the levels of that many clocks ago (rp2040._syncedBits), or the
 * pad (rp2040._padBits) for a bypassed pin.
 */
let smPatched = false;
function patchStateMachinePrototype() {
  if (smPatched) return;
  smPatched = true;
  const proto = StateMachine.prototype;
  const jmpCondition = proto.jmpCondition;
  const inPins = Object.getOwnPropertyDescriptor(proto, 'inPins').get;
  proto.jmpCondition = function syncedJmpCondition(condition) {
    if (condition === 0b110 && this.rp2040._syncDepth) {
      const pin = this.jmpPin;
      return pin < BANK0_PINS ? ((pinsSeenBy(this) >>> pin) & 1) === 1 : false;
    }
    return jmpCondition.call(this, condition);
  };
  Object.defineProperty(proto, 'inPins', {
    configurable: true,
    get() {
      if (!this.rp2040._syncDepth) return inPins.call(this);
      const value = pinsSeenBy(this);
      const base = this.inBase;
      return base ? (value << (32 - base)) | (value >>> base) : value;
    },
  });
}

export class Emulator {
  /**
   * @param {object} options
   * @param {(line: string) => void} [options.log] where diagnostics go (stderr)
   * @param {boolean} [options.verbose] rp2040js's debug and info messages too
   * @param {number} [options.xipMissNs] --xip-miss-ns: a miss in the XIP cache model stalls the core this long (0: off)
   * @param {boolean} [options.forbidXipFetch] --forbid-xip-fetch
   * @param {number} [options.inputSyncClocks] --input-sync-clocks: PIO and SIO see a pad this many clocks late
   *   (0: in the cycle it changes, rp2040js's behaviour; run.mjs's default is 2, silicon's)
   * @param {string} [options.flashUniqueId] --flash-unique-id: the 16 hex digits the flash answers to 0x4B
   */
  constructor({
    log = (line) => process.stderr.write(line + '\n'),
    verbose = false,
    xipMissNs = 0,
    forbidXipFetch = false,
    inputSyncClocks = 0,
    flashUniqueId = DEFAULT_UNIQUE_ID,
  } = {}) {
    this.log = log;
    this.trace = process.env.RP2040_HARNESS_TRACE ? log : null;
    const mcu = new RP2040();
    this.mcu = mcu;
    mcu.logger = quietLogger(verbose, log);
    this.core = mcu.core;
    this.clock = mcu.clock;
    this.events = new EventQueue();
    this.nowNs = 0;
    this.cycles = 0;
    this.cycleNs = 1e9 / mcu.clkSys;
    this.stallCycles = 0;
    this.exceptions = 0;
    this.coreHalted = false;
    /** Core cycles by instruction address (a Map), when profiling (run.mjs --profile). */
    this.profile = null;
    this.timedPhase = false;
    this.failure = null;
    mcu.addClockListener((hz) => this.clockChanged(hz));
    this.xip =
      xipMissNs > 0 || forbidXipFetch
        ? new XipCache({ missNs: xipMissNs, forbidFetch: forbidXipFetch, flash16: mcu.flash16, refuse: (m) => this.refuse(m) })
        : null;
    if (xipMissNs > 0) routeDataReads(this.core, this.xip);
    this.xipStallCycles = 0;
    // The flash outside XIP (XIP_SSI, IO_QSPI, the chip) and the boot ROM's functions on it.
    this.flash = new QspiFlash(this, { uniqueId: flashUniqueId });
    this.bootrom = new BootRom(this, this.flash);
    this.patchPads();
    this.patchGpioInputs();
    this.patchInputSync(inputSyncClocks);
    this.patchWatchdog();
    this.patchExceptionEntry();
    this.patchNvicPending();
    this.pio = mcu.pio.map((block, index) => new LockstepPio(this, block, index));
    this.pioActive = false;
  }

  // ---- time and events --------------------------------------------------

  /** Runs `fn(ns)` at simulated time `ns` (at the first cycle starting at or after it). */
  at(ns, fn) {
    if (!(ns >= this.nowNs)) ns = this.nowNs;
    this.events.push(ns, fn);
  }

  clockChanged(hz) {
    const ns = 1e9 / hz;
    if (this.timedPhase && hz !== REQUIRED_CLK_SYS_HZ) {
      this.refuse(
        `clk_sys changed to ${hz} Hz while PIO runs: the harness times PIO at ${REQUIRED_CLK_SYS_HZ} Hz (8 ns a cycle) only`,
      );
    }
    this.cycleNs = ns;
  }

  /** Called when the first state machine is enabled: from now on a cycle is exactly 8 ns. */
  enterTimedPhase() {
    if (this.timedPhase) return;
    if (this.mcu.clkSys !== REQUIRED_CLK_SYS_HZ) {
      this.refuse(
        `a PIO state machine was enabled with clk_sys at ${this.mcu.clkSys} Hz (as rp2040js computes it from the ` +
          `clock registers): the harness runs PIO only at ${REQUIRED_CLK_SYS_HZ} Hz, 8 ns a cycle`,
      );
    }
    this.xip?.start('the first PIO state machine enabled');
    // Align simulated time to the 8 ns grid from here on.
    this.nowNs = Math.ceil(this.nowNs / CYCLE_NS) * CYCLE_NS;
    this.syncClock();
    this.timedPhase = true;
    this.cycleNs = CYCLE_NS;
  }

  refuse(message) {
    const error = new Refusal(message);
    if (!this.failure) this.failure = error;
    throw error;
  }

  /** Brings rp2040js's clock to `nowNs`, firing its alarms that are due. */
  syncClock() {
    const clock = this.clock;
    const next = clock.nextAlarm;
    if (next !== null && next.nanos <= this.nowNs) clock.tick(this.nowNs - clock.nanosCounter);
    else if (this.nowNs > clock.nanosCounter) clock.nanosCounter = this.nowNs;
  }

  // ---- booting ----------------------------------------------------------

  /** Starts the core at the application's vector table (no boot ROM, no boot2). */
  boot(vectorTable = 0x10000100) {
    const { core, mcu } = this;
    core.VTOR = vectorTable;
    core.SP = mcu.readUint32(vectorTable);
    core.PC = mcu.readUint32(vectorTable + 4) & ~1;
  }

  /** For register-level tests: the core never executes; cycles still pass. */
  haltCore() {
    this.coreHalted = true;
  }

  // ---- bus access from JS (tests) ---------------------------------------

  read32(address) {
    return this.mcu.readUint32(address) >>> 0;
  }
  write32(address, value) {
    this.mcu.writeUint32(address, value >>> 0);
  }

  // ---- the loop ---------------------------------------------------------

  /** Runs `cycles` core cycles (or until `stop()`); returns the cycles run. */
  runCycles(cycles) {
    const { core, events, mcu } = this;
    const pio0 = this.pio[0];
    const pio1 = this.pio[1];
    let done = 0;
    this.stopped = false;
    while (done < cycles && !this.stopped) {
      let n;
      let idle = false;
      if (this.stallCycles) {
        n = this.stallCycles;
        this.stallCycles = 0;
      } else if (this.coreHalted || core.waiting) {
        idle = true;
        n = cycles - done;
        const toAlarm = this.clock.nanosToNextAlarm;
        if (toAlarm > 0) n = Math.min(n, Math.max(1, Math.ceil(toAlarm / this.cycleNs)));
        if (!this.pioActive) {
          const toEvent = events.nextNs - this.nowNs;
          if (toEvent < Infinity) n = Math.min(n, Math.max(1, Math.ceil(toEvent / this.cycleNs)));
        }
      } else {
        // Take a pending interrupt before the instruction (as executeInstruction would), so that
        // the exception entry's cycles pass before the handler's first instruction.
        if (core.interruptsUpdated && core.checkForInterrupts()) core.waiting = false;
        if (this.stallCycles) {
          n = this.stallCycles;
          this.stallCycles = 0;
        } else {
          const pc = core.PC;
          if (pc < XIP_BASE) {
            if (!this.bootrom.holds(pc)) {
              this.refuse(
                `the core jumped to 0x${pc.toString(16)} (boot ROM or unmapped): the boot ROM shim ` +
                  '(lib/bootrom.mjs) has rom_table_lookup and its function stubs only',
              );
            }
          } else if (pc < SRAM_BASE && !this.flash.xipReady) this.flash.refuseXip(pc, 'an instruction fetch');
          const xip = this.xip;
          // From SRAM once the run has started, or from the boot ROM: nothing to check.
          const missed = xip === null || pc < XIP_BASE || (pc >= SRAM_BASE && xip.started !== null) ? 0 : xip.fetch(pc);
          if (missed !== 0) {
            // The fetch waits for the flash before the instruction runs; it is then a hit.
            n = missed * this.xipMissCycles();
            this.xipStallCycles += n;
          } else {
            n = core.executeInstruction();
            if (this.profile) this.profile.set(pc, (this.profile.get(pc) || 0) + n);
          }
        }
        if (this.xip !== null && this.xip.dataMisses !== 0) {
          const stall = this.xip.dataMisses * this.xipMissCycles();
          this.xip.dataMisses = 0;
          this.xipStallCycles += stall;
          n += stall;
        }
      }
      if (this.pioActive) {
        const wasIdle = idle && !this.coreHalted;
        const heap = events.heap;
        const ring = this.syncRing;
        if (ring !== null && this.syncStale) this.restartSync();
        for (let i = 0; i < n; i++) {
          if (heap.length !== 0 && heap[0].ns <= this.nowNs) this.runDueEvents();
          if (ring !== null) {
            // The synchronisers: this cycle sees the pads as they were `depth` cycles ago.
            const k = this.syncIndex;
            mcu._syncedBits = ring[k];
            ring[k] = mcu._padBits;
            this.syncIndex = k + 1 === ring.length ? 0 : k + 1;
          }
          pio0.step();
          if (pio1.active) pio1.step();
          this.nowNs += this.cycleNs;
          if (wasIdle && !core.waiting) {
            n = i + 1;
            break;
          }
        }
      } else {
        if (events.nextNs <= this.nowNs) this.runDueEvents();
        this.nowNs += n * this.cycleNs;
        this.syncStale = true;
      }
      done += n;
      this.cycles += n;
      this.syncClock();
    }
    // Events due exactly at the end belong to the next cycle's start.
    return done;
  }

  /** Runs until simulated time reaches `ns`. */
  runUntil(ns) {
    while (this.nowNs < ns && !this.stopped) {
      this.runCycles(Math.max(1, Math.ceil((ns - this.nowNs) / this.cycleNs)));
    }
  }

  stop() {
    this.stopped = true;
  }

  runDueEvents() {
    const { events } = this;
    while (events.nextNs <= this.nowNs) {
      const { ns, fn } = events.pop();
      fn(ns);
    }
  }

  updatePioActive() {
    this.pioActive = this.pio.some((p) => p.active);
    if (this.pioActive) this.enterTimedPhase();
  }

  // ---- patches ----------------------------------------------------------

  /** Gap: rp2040js resets pads to 0x36 (input disabled); silicon to 0x56. */
  patchPads() {
    for (const pin of this.mcu.gpio) pin.padValue = PAD_RESET_SILICON;
  }

  /**
   * Gap: in rp2040js a pin's input is only what `setInputValue` gave it; on
   * silicon the input buffer reads the pad, which an enabled output drives.
   * Here an output-enabled pin reads back its driven level (after OUTOVER),
   * through input enable and INOVER as before.
   */
  patchGpioInputs() {
    patchGpioPrototype();
    this.mcu._padBits = 0;
    for (const pin of this.mcu.gpio) {
      pin._bank0 = true;
      pin.updateInput();
    }
  }

  /** Core cycles one XIP cache miss stalls for (--xip-miss-ns), at the current clk_sys. */
  xipMissCycles() {
    return Math.max(1, Math.ceil(this.xip.missNs / this.cycleNs));
  }

  /**
   * --input-sync-clocks N. Gap: rp2040js's PIO and SIO see a pad in the cycle
   * it changes. Silicon: each GPIO input reaches PIO through a 2-flop
   * synchroniser unless that PIO block's INPUT_SYNC_BYPASS bit for the pin is
   * set (datasheet 3.5.6.3), and SIO's GPIO_IN is synchronised the same way
   * (2.3.1.2, 2.19). A ring of N words holds the bank 0 levels of the last N
   * cycles; PIO reads the oldest (patchStateMachinePrototype), and SIO's
   * GPIO_IN too. Exact while PIO runs in lockstep; before the first state
   * machine is enabled cycles pass in whole instructions and SIO reads the
   * pads undelayed.
   */
  patchInputSync(depth) {
    const { mcu } = this;
    if (!Number.isInteger(depth) || depth < 0 || depth > 64) throw new Error(`input sync clocks ${depth}: 0..64`);
    mcu._syncDepth = depth;
    mcu._syncedBits = mcu._padBits;
    this.syncRing = depth ? new Int32Array(depth) : null;
    this.syncIndex = 0;
    this.syncStale = true;
    if (!depth) return;
    patchStateMachinePrototype();
    const sio = mcu.sio;
    const read = sio.readUint32.bind(sio);
    sio.readUint32 = (offset) => {
      if (offset !== SIO_GPIO_IN) return read(offset);
      return (this.syncStale ? mcu._padBits : mcu._syncedBits) >>> 0;
    };
  }

  /** The synchronisers after cycles passed in bulk (no PIO): they hold the pads' current levels. */
  restartSync() {
    const { mcu } = this;
    this.syncRing.fill(mcu._padBits);
    mcu._syncedBits = mcu._padBits;
    this.syncStale = false;
  }

  /**
   * Gap: rp2040js's watchdog only logs a warning when it runs out (and again
   * on every wrap of its counter); silicon resets the chip (datasheet 4.7).
   * The harness has no reset: a watchdog that runs out, or a reset forced by
   * CTRL.TRIGGER, refuses the run. rp2040js's counter model is kept: LOAD
   * counts down twice per µs tick (RP2040-E1), so the firmware loads 2 × µs.
   */
  patchWatchdog() {
    const watchdog = this.mcu.findPeripheral(WATCHDOG_BASE);
    this.watchdog = watchdog;
    watchdog.onWatchdogTrigger = () => {
      const at = `at ${(this.nowNs / 1e6).toFixed(3)} ms simulated`;
      if (watchdog.reason & 2) {
        this.refuse(`the firmware forced a watchdog reset (WATCHDOG CTRL.TRIGGER) ${at}: the harness cannot reset the chip`);
      }
      this.refuse(
        `the watchdog ran out ${at} (the firmware stopped feeding it): on silicon the chip resets here; ` +
          'the harness cannot reset the chip',
      );
    };
  }

  /**
   * --pad-report: PADS_BANK0 GPIO0..29 (datasheet 2.19.6.3) as the firmware
   * left them, decoded, with IO_BANK0's GPIOn_CTRL (2.19.6.1).
   */
  padReport() {
    const drives = [2, 4, 8, 12];
    const pins = [];
    for (let pin = 0; pin < BANK0_PINS; pin++) {
      const pad = this.read32(PADS_BANK0_BASE + 4 + 4 * pin);
      const ctrl = this.read32(IO_BANK0_BASE + 8 * pin + 4);
      pins.push({
        gpio: pin,
        pad,
        slewfast: (pad & 1) !== 0,
        schmitt: (pad & 2) !== 0,
        pde: (pad & 4) !== 0,
        pue: (pad & 8) !== 0,
        drive_ma: drives[(pad >>> 4) & 3],
        ie: (pad & 0x40) !== 0,
        od: (pad & 0x80) !== 0,
        ctrl,
        funcsel: ctrl & 0x1f,
      });
    }
    return { pads_bank0_voltage_select: this.read32(PADS_BANK0_BASE), gpio: pins };
  }

  /**
   * Gap: rp2040js treats IRQs 0..25 as level-sensitive lines and keeps their
   * NVIC pending bit set while active, and NVIC_ICPR cannot clear 0..24. So an
   * interrupt pended by software (NVIC_ISPR; RTIC dispatches its software
   * tasks that way, on SPI0_IRQ here) stays pending forever: its handler runs
   * again and again and every lower priority starves. ARMv6-M clears the
   * pending bit on exception entry and on ICPR; a line still asserted pends
   * again. Here the peripherals' line levels are tracked and an IRQ's pending
   * bit is cleared at its entry and by ICPR unless its line is asserted.
   */
  patchNvicPending() {
    const core = this.core;
    const setInterrupt = core.setInterrupt.bind(core);
    let lines = 0;
    core.setInterrupt = (irq, value) => {
      if (value) lines |= 1 << irq;
      else lines &= ~(1 << irq);
      setInterrupt(irq, value);
    };
    this.nvicLines = () => lines;
    const entry = core.exceptionEntry;
    core.exceptionEntry = (exceptionNumber) => {
      if (exceptionNumber >= 16) {
        const bit = 1 << (exceptionNumber - 16);
        if (!(lines & bit)) core.pendingInterrupts &= ~bit;
      }
      entry(exceptionNumber);
    };
    const ppb = this.mcu.ppb;
    const write = ppb.writeUint32.bind(ppb);
    const NVIC_ICPR = 0x280;
    ppb.writeUint32 = (offset, value) => {
      if (offset === NVIC_ICPR) {
        core.pendingInterrupts &= ~(value & ~lines);
        return;
      }
      write(offset, value);
    };
  }

  /** Gap: rp2040js enters an exception in zero cycles; silicon takes 15. */
  patchExceptionEntry() {
    const core = this.core;
    const entry = core.exceptionEntry.bind(core);
    core.exceptionEntry = (exceptionNumber) => {
      entry(exceptionNumber);
      this.exceptions++;
      this.stallCycles += EXCEPTION_ENTRY_CYCLES;
    };
  }
}

/** Instructions the harness refuses to execute, and why. */
export function refusedInstruction(opcode) {
  const kind = opcode >>> 13;
  const dest = (opcode >>> 5) & 7;
  if (opcode & 0x1f00) {
    return `[delay]/side-set bits ${(opcode >>> 8) & 0x1f}: rp2040js 1.4.1 does not stall on delays (it only counts them)`;
  }
  if (kind === 1) return 'WAIT: rp2040js ends a WAIT from setInputValue, outside the state machine step, a cycle early';
  if ((kind === 3 && dest === 7) || (kind === 5 && dest === 4)) {
    return 'an EXEC destination: the executed instruction would escape these checks';
  }
  return null;
}

/**
 * One PIO block, stepped by the Emulator once per core cycle instead of by
 * rp2040js's setTimeout loop, with the refusals and fixes of GAPS.md.
 */
class LockstepPio {
  constructor(emulator, block, index) {
    this.emulator = emulator;
    this.block = block;
    this.index = index;
    this.enabled = [];
    this.active = false;
    this.refusedMask = 0;
    /** Per state machine, an instruction written to SMx_INSTR while enabled, for its next cycle (-1: none). */
    this.forced = [-1, -1, -1, -1];
    this.anyForced = false;
    // Gap: RPPIO.run() steps 1000 times per setTimeout, apart from the core.
    block.run = () => {};
    const write = block.writeUint32.bind(block);
    block.writeUint32 = (offset, value) => this.write(write, offset, value);
    for (const sm of block.machines) {
      // CLKDIV_RESTART: with the divider at 1.0 (the only one accepted) it has no effect.
      sm.clkDivRestart = () => {};
    }
  }

  /**
   * One system clock: every enabled state machine steps once (gap: rp2040js's
   * RPPIO.step() also steps disabled ones), then the GPIO see the pins.
   */
  step() {
    const { enabled, block } = this;
    const before = block.fdebug;
    for (let i = 0; i < enabled.length; i++) {
      const sm = enabled[i];
      if (this.anyForced && this.forced[sm.index] !== -1) {
        this.runForced(sm);
        continue;
      }
      if (this.refusedMask & (1 << sm.pc)) this.refuseAt(sm, block.instructions[sm.pc]);
      sm.step();
    }
    if (block.fdebug !== before) this.fixFdebug(before);
    block.checkChangedPins();
  }

  /**
   * Gap: rp2040js executes an instruction written to SMx_INSTR within the
   * bus write and then steps the state machine's program in the same cycle,
   * so a forced instruction costs the program no cycle. Silicon (datasheet
   * 3.5.7) executes it in the state machine's next cycle, in place of the
   * program's instruction, which then runs a cycle later. Here a forced
   * instruction for an enabled state machine is held and executed (as
   * rp2040js executes it, EXEC_STALLED included) in its next step instead of
   * the step; a disabled one still executes at once.
   */
  runForced(sm) {
    const opcode = this.forced[sm.index];
    this.forced[sm.index] = -1;
    this.anyForced = this.forced.some((op) => op !== -1);
    this.writeInstr(sm, opcode);
  }

  /** rp2040js's own SMx_INSTR write: execute now. */
  writeInstr(sm, opcode) {
    sm.writeUint32(PIO.SM0_INSTR - PIO.SM0_CLKDIV, opcode);
  }

  /**
   * Gaps in FDEBUG. rp2040js latches stall flags in rxStall/txStall and ORs
   * all of them into FDEBUG on every stall (and on every FDEBUG write): here
   * they are events, set by rp2040js in the cycle they happen. And rp2040js
   * sets TXSTALL on a nonblocking PULL from an empty FIFO, which the datasheet
   * does not (TXSTALL: "stalled on empty TX FIFO during a blocking PULL, or
   * an OUT with autopull enabled"; a nonblocking PULL on empty is MOV OSR, X):
   * a TXSTALL bit newly set for a state machine that is not blocked is undone.
   */
  fixFdebug(before) {
    const { block } = this;
    block.rxStall = 0;
    block.txStall = 0;
    const newTx = block.fdebug & ~before & (0xf * FDEBUG_TXSTALL);
    if (!newTx) return;
    for (const sm of block.machines) {
      const bit = FDEBUG_TXSTALL << sm.index;
      if (newTx & bit && !sm.waiting) block.fdebug &= ~bit;
    }
  }

  /** FDEBUG bits of state machines blocked right now (they stay set while blocked). */
  stalledNow() {
    let bits = 0;
    for (const sm of this.block.machines) {
      if (!sm.waiting) continue;
      const t = sm.waitType;
      if (t === WAIT_RX_FIFO) bits |= FDEBUG_RXSTALL << sm.index;
      else if (t === WAIT_TX_FIFO || t === WAIT_OUT) bits |= FDEBUG_TXSTALL << sm.index;
    }
    return bits;
  }

  smName(sm) {
    return `PIO${this.index} SM${sm.index}`;
  }

  refuseAt(sm, opcode) {
    this.emulator.refuse(
      `${this.smName(sm)} executes ${describe(opcode)} at ${sm.pc}: ${refusedInstruction(opcode)}; ` +
        'the harness refuses it so that an emulator gap cannot pass for a correct timestamp',
    );
  }

  checkMachine(sm) {
    if (!sm.enabled) return;
    if (sm.clockDivInt !== 1 || sm.clockDivFrac !== 0) {
      const div = (sm.clockDivInt || 65536) + sm.clockDivFrac / 256;
      this.emulator.refuse(
        `${this.smName(sm)} is enabled with clock divider ${div}: rp2040js ignores CLKDIV; the harness steps ` +
          'every state machine once per system clock and accepts 1.0 only',
      );
    }
    this.checkSideSet(sm);
  }

  checkSideSet(sm) {
    const count = sm.pinCtrl >>> 29;
    if (count || sm.execCtrl & EXECCTRL_SIDE_EN) {
      this.emulator.refuse(
        `${this.smName(sm)} uses side-set (PINCTRL.SIDESET_COUNT ${count}, EXECCTRL.SIDE_EN ` +
          `${(sm.execCtrl >>> 30) & 1}): the harness refuses side-set (unverified in rp2040js 1.4.1, and its ` +
          'delay bits would not stall)',
      );
    }
  }

  write(write, offset, value) {
    const P = PIO;
    const { block } = this;
    if (offset >= P.INSTR_MEM0 && offset < P.INSTR_MEM0 + 32 * 4) {
      write(offset, value);
      const index = (offset - P.INSTR_MEM0) >> 2;
      const bit = 1 << index;
      this.refusedMask = refusedInstruction(value & 0xffff) ? this.refusedMask | bit : this.refusedMask & ~bit;
      return;
    }
    if (offset >= P.SM0_CLKDIV && offset < P.SM0_CLKDIV + 4 * P.SM_STRIDE) {
      const sm = block.machines[Math.floor((offset - P.SM0_CLKDIV) / P.SM_STRIDE)];
      const reg = P.SM0_CLKDIV + ((offset - P.SM0_CLKDIV) % P.SM_STRIDE);
      switch (reg) {
        case P.SM0_SHIFTCTRL: {
          const joins = SHIFTCTRL_FJOIN_RX | SHIFTCTRL_FJOIN_TX;
          const changed = ((sm.shiftCtrl ^ value) & joins) !== 0;
          write(offset, value);
          if (changed) this.applyJoins(sm);
          return;
        }
        case P.SM0_INSTR: {
          const opcode = value & 0xffff;
          if (refusedInstruction(opcode)) this.refuseAt(sm, opcode);
          if (sm.pinCtrl >>> 29 || sm.execCtrl & EXECCTRL_SIDE_EN) this.checkSideSet(sm);
          if (sm.enabled) {
            // Silicon: in the state machine's next cycle (runForced).
            this.forced[sm.index] = opcode;
            this.anyForced = true;
            return;
          }
          const before = block.fdebug;
          write(offset, value);
          if (block.fdebug !== before) this.fixFdebug(before);
          // Gap: a pin written by SMx_INSTR reaches the GPIO only at rp2040js's next PIO step.
          block.checkChangedPins();
          return;
        }
        default:
          write(offset, value);
          this.checkMachine(sm);
          return;
      }
    }
    switch (offset) {
      case P.CTRL: {
        write(offset, value);
        // A held forced instruction of a state machine now disabled runs at once, as for a disabled one.
        for (const sm of this.enabled) if (!sm.enabled && this.forced[sm.index] !== -1) this.runForced(sm);
        this.enabled = block.machines.filter((sm) => sm.enabled);
        this.active = this.enabled.length > 0;
        for (const sm of this.enabled) this.checkMachine(sm);
        this.emulator.updatePioActive();
        return;
      }
      case P.FDEBUG: {
        // Write 1 to clear (rp2040js ORs its latched stall flags back in); a state machine
        // still blocked keeps its stall flag.
        const kept = block.fdebug & ~block.rawWriteValue;
        write(offset, value);
        block.rxStall = 0;
        block.txStall = 0;
        block.fdebug = kept | this.stalledNow();
        return;
      }
      default:
        write(offset, value);
    }
  }

  /**
   * Gap: rp2040js ignores SHIFTCTRL.FJOIN_RX/FJOIN_TX (its FIFOs stay 4 deep).
   * Datasheet: the joined FIFO is 8 deep, the other always reads full and
   * empty, and both are flushed when a join bit changes.
   */
  applyJoins(sm) {
    const FifoClass = sm.rxFIFO.constructor;
    const rxJoin = (sm.shiftCtrl & SHIFTCTRL_FJOIN_RX) !== 0;
    const txJoin = (sm.shiftCtrl & SHIFTCTRL_FJOIN_TX) !== 0;
    sm.rxFIFO = new FifoClass(rxJoin ? 8 : txJoin ? 0 : 4);
    sm.txFIFO = new FifoClass(txJoin ? 8 : rxJoin ? 0 : 4);
    sm.updateDMARx();
    sm.updateDMATx();
    this.block.checkInterrupts();
  }
}
