// The RP2040's XIP flash as the core sees it, for --xip-miss-ns and
// --forbid-xip-fetch: a model of the 16 KB two-way set-associative XIP cache
// with 8-byte lines (datasheet 2.6.3.1; LRU replacement is assumed, the
// datasheet does not state the policy), where a miss stalls the core for a
// fixed time; and the rule that no instruction is fetched from flash once
// the firmware's run has started: from the core's first instruction in SRAM
// or the first PIO state machine's enable, whichever comes first (a
// firmware that copies itself to RAM keeps only its reset handler and copy
// routine in flash and sets PIO up from RAM). rp2040js reads flash with no
// wait states.

/** Lines of 8 bytes, 2 ways, 16 KB: 1024 sets. */
export const XIP_LINE_BYTES = 8;
export const XIP_WAYS = 2;
export const XIP_SETS = 16384 / (XIP_LINE_BYTES * XIP_WAYS);

const XIP_END = 0x14000000;
const SRAM_BASE = 0x20000000;

function hex(value) {
  return `0x${(value >>> 0).toString(16).padStart(8, '0')}`;
}

export class XipCache {
  /**
   * @param {object} options
   * @param {number} options.missNs the core's stall for one line from flash (0: no cost)
   * @param {boolean} options.forbidFetch refuse a fetch from flash after one from SRAM
   * @param {Uint16Array} options.flash16 the flash image, to tell 32-bit instructions
   * @param {(message: string) => never} options.refuse
   */
  constructor({ missNs, forbidFetch, flash16, refuse }) {
    this.missNs = missNs;
    this.forbidFetch = forbidFetch;
    this.flash16 = flash16;
    this.refuse = refuse;
    this.tags = new Int32Array(XIP_SETS * XIP_WAYS).fill(-1);
    /** Per set, the way to replace next: the least recently used. */
    this.victim = new Uint8Array(XIP_SETS);
    /** What started the run (a sentence), or null. */
    this.started = null;
    /** Misses by data reads (literal pools, rodata, vector table) not yet charged. */
    this.dataMisses = 0;
    /** The line looked up last, when it is in the cache: its set's most recent, so a hit that changes nothing. */
    this.lastLine = -1;
    this.misses = 0;
    this.hits = 0;
  }

  /**
   * Looks up the line holding `address` (in 0x10000000..0x13ffffff) and fills
   * it on a miss; returns 1 for a miss, 0 for a hit. The aliases at
   * 0x11000000 (NOALLOC) look up without filling; 0x12000000 and
   * 0x13000000 (NOCACHE) always go to the flash.
   */
  access(address) {
    const alias = (address >>> 24) & 3;
    if (alias >= 2) {
      this.misses++;
      return 1;
    }
    const line = (address & 0xffffff) >>> 3;
    if (line === this.lastLine) {
      this.hits++;
      return 0;
    }
    const set = line & (XIP_SETS - 1);
    const tag = line >>> 10;
    const i = set * XIP_WAYS;
    const { tags, victim } = this;
    if (tags[i] === tag) {
      victim[set] = 1;
      this.hits++;
      this.lastLine = line;
      return 0;
    }
    if (tags[i + 1] === tag) {
      victim[set] = 0;
      this.hits++;
      this.lastLine = line;
      return 0;
    }
    this.misses++;
    if (alias === 1) return 1;
    const way = victim[set];
    tags[i + way] = tag;
    victim[set] = way ^ 1;
    this.lastLine = line;
    return 1;
  }

  /** The firmware's run has started (`what`): from now on --forbid-xip-fetch refuses a fetch from flash. */
  start(what) {
    if (this.started === null) this.started = what;
  }

  /**
   * The instruction fetch at `pc` (at or above 0x10000000): the lines it
   * misses (two for a 32-bit instruction across a line), or a refusal.
   */
  fetch(pc) {
    if (pc >= XIP_END) {
      if (pc >= SRAM_BASE && this.started === null) this.start(`the core's first instruction from SRAM, at ${hex(pc)}`);
      return 0;
    }
    if (this.forbidFetch && this.started !== null) {
      this.refuse(
        `--forbid-xip-fetch: an instruction fetched from XIP flash at PC ${hex(pc)} after the run started ` +
          `(${this.started}): code that must run from RAM is still in flash, where a cache miss stalls the core ` +
          'for microseconds',
      );
    }
    if (!this.missNs) return 0;
    let missed = this.access(pc);
    if ((pc & 7) === 6 && this.flash16[(pc & 0xffffff) >>> 1] >>> 11 >= 0b11101) missed += this.access(pc + 2);
    return missed;
  }
}

/**
 * Sends the core's data reads from XIP flash through `cache` (counted in
 * `cache.dataMisses`, charged by the caller after the instruction: a load's
 * effect is internal, so charging after it changes no timing seen outside).
 */
export function routeDataReads(core, cache) {
  const rp2040 = core.rp2040;
  core.readUint32 = (address) => {
    if (address >= 0x10000000 && address < XIP_END) cache.dataMisses += cache.access(address);
    return rp2040.readUint32(address);
  };
  core.readUint16 = (address) => {
    if (address >= 0x10000000 && address < XIP_END) cache.dataMisses += cache.access(address);
    return rp2040.readUint16(address);
  };
  core.readUint8 = (address) => {
    if (address >= 0x10000000 && address < XIP_END) cache.dataMisses += cache.access(address);
    return rp2040.readUint8(address);
  };
}
