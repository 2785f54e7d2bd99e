// A small PIO assembler, written from the RP2040 datasheet's instruction
// encoding (section 3.4), not from rp2040js, so the harness's tests program
// PIO with encodings that rp2040js did not produce itself.
//
//   assemble(['in x, 32', 'push noblock', 'jmp x-- 3', 'jmp x-- 0'])
//
// Syntax: one instruction a line, pioasm's spelling; labels are not
// supported (targets are absolute addresses); `[n]` adds delay bits and
// `side n` side-set bits (given the side-set bit count), so that tests can
// build the programs the harness must refuse.

const JMP_CONDITIONS = { '': 0, '!x': 1, 'x--': 2, '!y': 3, 'y--': 4, 'x!=y': 5, pin: 6, '!osre': 7 };
const IN_SOURCES = { pins: 0, x: 1, y: 2, null: 3, isr: 6, osr: 7 };
const OUT_DESTINATIONS = { pins: 0, x: 1, y: 2, null: 3, pindirs: 4, pc: 5, isr: 6, exec: 7 };
const MOV_DESTINATIONS = { pins: 0, x: 1, y: 2, exec: 4, pc: 5, isr: 6, osr: 7 };
const MOV_SOURCES = { pins: 0, x: 1, y: 2, null: 3, status: 5, isr: 6, osr: 7 };
const SET_DESTINATIONS = { pins: 0, x: 1, y: 2, pindirs: 4 };

function lookup(table, name, what, line) {
  if (!(name in table)) throw new Error(`pio-asm: unknown ${what} '${name}' in '${line}'`);
  return table[name];
}

/** Encodes one instruction. `sideSetBits` is PINCTRL.SIDESET_COUNT (0: all five bits are delay). */
export function assembleLine(line, sideSetBits = 0) {
  let text = line.trim().toLowerCase();
  let delay = 0;
  let side = null;
  const delayMatch = text.match(/\[(\d+)\]\s*$/);
  if (delayMatch) {
    delay = Number(delayMatch[1]);
    text = text.slice(0, delayMatch.index).trim();
  }
  const sideMatch = text.match(/\s+side\s+(\d+)\s*$/);
  if (sideMatch) {
    side = Number(sideMatch[1]);
    text = text.slice(0, sideMatch.index).trim();
  }
  const [op, ...rest] = text.split(/\s+/);
  const args = rest.join(' ').split(',').map((s) => s.trim()).filter((s) => s !== '');
  let word;
  switch (op) {
    case 'jmp': {
      const parts = rest;
      const addr = Number(parts[parts.length - 1]);
      const cond = parts.length > 1 ? parts[0] : '';
      word = (0 << 13) | (lookup(JMP_CONDITIONS, cond, 'jmp condition', line) << 5) | (addr & 0x1f);
      break;
    }
    case 'wait': {
      // wait POLARITY gpio|pin|irq INDEX [rel]
      const [pol, src, index, rel] = rest;
      const source = { gpio: 0, pin: 1, irq: 2 }[src];
      if (source === undefined) throw new Error(`pio-asm: bad wait source in '${line}'`);
      word = (1 << 13) | (Number(pol) << 7) | (source << 5) | (Number(index) & 0x1f) | (rel === 'rel' ? 0x10 : 0);
      break;
    }
    case 'in':
      word = (2 << 13) | (lookup(IN_SOURCES, args[0], 'in source', line) << 5) | (Number(args[1]) & 0x1f);
      break;
    case 'out':
      word = (3 << 13) | (lookup(OUT_DESTINATIONS, args[0], 'out destination', line) << 5) | (Number(args[1]) & 0x1f);
      break;
    case 'push':
    case 'pull': {
      const flags = rest;
      const ifFlag = flags.includes(op === 'push' ? 'iffull' : 'ifempty');
      const block = !flags.includes('noblock');
      word = (4 << 13) | (op === 'pull' ? 1 << 7 : 0) | (ifFlag ? 1 << 6 : 0) | (block ? 1 << 5 : 0);
      break;
    }
    case 'mov': {
      let src = args[1];
      let mop = 0;
      if (src.startsWith('~') || src.startsWith('!')) {
        mop = 1;
        src = src.slice(1).trim();
      } else if (src.startsWith('::')) {
        mop = 2;
        src = src.slice(2).trim();
      }
      word =
        (5 << 13) |
        (lookup(MOV_DESTINATIONS, args[0], 'mov destination', line) << 5) |
        (mop << 3) |
        lookup(MOV_SOURCES, src, 'mov source', line);
      break;
    }
    case 'irq': {
      // irq [set|nowait|wait|clear] INDEX [rel]
      let words = rest;
      let clear = 0;
      let wait = 0;
      if (['set', 'nowait', 'wait', 'clear'].includes(words[0])) {
        clear = words[0] === 'clear' ? 1 : 0;
        wait = words[0] === 'wait' ? 1 : 0;
        words = words.slice(1);
      }
      const index = (Number(words[0]) & 0x7) | (words[1] === 'rel' ? 0x10 : 0);
      word = (6 << 13) | (clear << 6) | (wait << 5) | index;
      break;
    }
    case 'set':
      word = (7 << 13) | (lookup(SET_DESTINATIONS, args[0], 'set destination', line) << 5) | (Number(args[1]) & 0x1f);
      break;
    case 'nop': // mov y, y
      word = (5 << 13) | (2 << 5) | 2;
      break;
    default:
      throw new Error(`pio-asm: unknown instruction '${op}' in '${line}'`);
  }
  const delayBits = 5 - sideSetBits;
  if (delay >= 1 << delayBits) throw new Error(`pio-asm: delay ${delay} too long in '${line}'`);
  let field = delay;
  if (side !== null) {
    if (!sideSetBits) throw new Error(`pio-asm: side-set without side-set bits in '${line}'`);
    field |= side << delayBits;
  }
  return (word | (field << 8)) & 0xffff;
}

export function assemble(lines, sideSetBits = 0) {
  return lines.map((l) => assembleLine(l, sideSetBits));
}

/** A short text for an encoded instruction, for error messages. */
export function describe(opcode) {
  const kinds = ['jmp', 'wait', 'in', 'out', opcode & 0x80 ? 'pull' : 'push', 'mov', 'irq', 'set'];
  const kind = kinds[opcode >>> 13];
  return `${kind} (0x${opcode.toString(16).padStart(4, '0')})`;
}
