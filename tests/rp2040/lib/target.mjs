// The target, played at exact simulated nanoseconds against the firmware's
// pins: GP2 stimulus (PIO0 SM3 output), GP3 response (input), GP4 UART1 TX
// (to the target), GP5 UART1 RX (from the target); GP6 is the firmware's
// trigger output (PIO1 SM0), which the target only watches.
//
// Answers are in order, as a real target's single responder gives them: an
// answer is due at max(its own time, the previous answer + one PIO tick)
// (GPIO) or max(its own time, the end of the previous answer's frame) (UART).

import { GPIOPinState } from 'rp2040js';
import { PIO_TICK_NS } from './emulator.mjs';

export const PIN = { STIMULUS: 2, RESPONSE: 3, UART_TX: 4, UART_RX: 5, TRIGGER: 6 };

/** gpio-echo: the response returns to idle this long after max(stimulus return, answer). */
export const RETURN_DELAY_NS = 1000;

/**
 * A latency file: one latency in ns a line (an integer), `x` for no answer;
 * blank lines and `#` comments are skipped. Used in order and cycled.
 */
export class Latencies {
  constructor(entries) {
    if (!entries.length) throw new Error('the latency list is empty');
    this.entries = entries;
    this.index = 0;
  }
  static parse(text, name = 'latencies') {
    const entries = [];
    text.split('\n').forEach((raw, i) => {
      const line = raw.replace(/#.*/, '').trim();
      if (!line) return;
      if (line === 'x' || line === 'X') {
        entries.push(null);
      } else if (/^\d+$/.test(line)) {
        entries.push(Number(line));
      } else {
        throw new Error(`${name}:${i + 1}: '${raw.trim()}' is neither a latency in ns (an integer) nor x`);
      }
    });
    return new Latencies(entries);
  }
  /** The next latency in ns, or null for no answer. */
  next() {
    const value = this.entries[this.index];
    this.index = (this.index + 1) % this.entries.length;
    return value;
  }
}

function level(state) {
  if (state === GPIOPinState.High) return 1;
  if (state === GPIOPinState.Low) return 0;
  return null; // not driven
}

/**
 * Calls `onEdge(level, ns)` for each change of a driven output between low
 * and high; with `undriven: 0` (or 1) a pin whose output is not enabled
 * counts as that level (its pad's pull-down or pull-up, which rp2040js does
 * not model: GAPS.md). `ns` is when the new level is on the pad: the end of the cycle
 * whose PIO step (or CPU write) drove it, which is when another input can
 * first see it (an input set at time t is sampled by the step at t).
 */
export function watchOutput(emulator, pinIndex, onEdge, { undriven = null } = {}) {
  const pin = emulator.mcu.gpio[pinIndex];
  const read = (state) => level(state) ?? undriven;
  let last = read(pin.value);
  pin.addListener((state) => {
    const now = read(state);
    if (now !== null && last !== null && now !== last) onEdge(now, emulator.nowNs + emulator.cycleNs);
    last = now;
  });
}

function drive(emulator, pinIndex, value) {
  emulator.mcu.gpio[pinIndex].setInputValue(!!value);
}

/**
 * gpio-echo. `edge` rising|falling|toggle. For rising (falling) the
 * stimulus's rising (falling) edge is the stimulus and takes the next
 * latency: the response goes to the stimulus's active level after it. The
 * stimulus's return takes no latency: an answered response returns to idle
 * RETURN_DELAY_NS after max(the stimulus's return, the answer); after an `x`
 * the response is already idle and stays so, quietly, so the next stimulus
 * meets the usual idle line. For toggle every stimulus edge takes a latency
 * and an answer toggles the response (after an `x` the response's level is
 * the stimulus's inverse; every answer is still exactly one edge).
 */
export class GpioEcho {
  constructor(emulator, latencies, { edge = 'rising', returnDelayNs = RETURN_DELAY_NS } = {}) {
    if (!['rising', 'falling', 'toggle'].includes(edge)) throw new Error(`--edge ${edge}: rising, falling or toggle`);
    this.emulator = emulator;
    this.latencies = latencies;
    this.edge = edge;
    this.returnDelayNs = returnDelayNs;
    this.idle = edge === 'falling' ? 1 : 0;
    this.response = this.idle;
    this.lastAnswerNs = -Infinity;
    this.answered = false;
    this.stimuli = 0;
    this.answers = 0;
    drive(emulator, PIN.RESPONSE, this.idle);
    watchOutput(emulator, PIN.STIMULUS, (value, ns) => this.stimulus(value, ns));
  }

  schedule(ns, value) {
    const at = Math.max(ns, this.lastAnswerNs + PIO_TICK_NS);
    this.lastAnswerNs = at;
    this.emulator.at(at, () => drive(this.emulator, PIN.RESPONSE, value));
    return at;
  }

  stimulus(value, ns) {
    if (this.edge === 'toggle') {
      this.stimuli++;
      const latency = this.latencies.next();
      if (latency === null) return;
      this.answers++;
      this.response ^= 1;
      this.schedule(ns + latency, this.response);
      return;
    }
    const active = this.edge === 'rising' ? 1 : 0;
    if (value === active) {
      this.stimuli++;
      const latency = this.latencies.next();
      this.answered = latency !== null;
      if (!this.answered) return;
      this.answers++;
      this.schedule(ns + latency, active);
    } else if (this.answered) {
      this.answered = false;
      this.schedule(Math.max(ns, this.lastAnswerNs) + this.returnDelayNs, this.idle);
    }
  }
}

// UART register bits (PL011, datasheet 4.2.8).
const UARTFR_BUSY = 1 << 3;
const UARTFR_RXFE = 1 << 4;
const UARTFR_TXFF = 1 << 5;
const UARTFR_RXFF = 1 << 6;
const UARTFR_TXFE = 1 << 7;
const UARTLCR_H_FEN = 1 << 4;
const UARTCR_UARTEN = 1 << 0;
const UARTCR_RXE = 1 << 9;

/**
 * UART1's line: rp2040js sends a byte at `onByte` the moment the CPU writes
 * UARTDR and moves no pin. This models the transmitter (a byte starts when
 * the shifter is free, on the 8 ns grid, and lasts 10 bit times; the 32-byte
 * FIFO, 1 deep without FEN; UARTFR's TXFE/TXFF/BUSY from that model) and
 * presents the frame on GP4's input, which PIO reads. Bytes to the firmware
 * are driven on GP5 (start bit, 8 data bits LSB first, stop bit) and handed
 * to UART1's RX FIFO at the stop bit's middle.
 */
export class UartLine {
  constructor(emulator, { index = 1, txPin = PIN.UART_TX, rxPin = PIN.UART_RX } = {}) {
    this.emulator = emulator;
    this.uart = emulator.mcu.uart[index];
    this.txPin = txPin;
    this.rxPin = rxPin;
    this.txFreeNs = 0;
    this.txStarts = []; // start times of bytes not yet started
    this.dropped = 0;
    this.rxDropped = 0;
    this.onTxStart = null; // (byte, startNs, bitNs)
    drive(emulator, txPin, 1);
    drive(emulator, rxPin, 1);
    this.uart.onByte = (byte) => this.transmit(byte);
    const uart = this.uart;
    const line = this;
    Object.defineProperty(uart, 'flags', {
      get() {
        const pending = line.pendingTx();
        const capacity = uart.lineCtrlRegister & UARTLCR_H_FEN ? 32 : 1;
        return (
          (uart.rxFIFO.full ? UARTFR_RXFF : 0) |
          (uart.rxFIFO.empty ? UARTFR_RXFE : 0) |
          (pending === 0 ? UARTFR_TXFE : 0) |
          (pending >= capacity ? UARTFR_TXFF : 0) |
          (line.emulator.nowNs < line.txFreeNs ? UARTFR_BUSY : 0)
        );
      },
    });
  }

  /** The firmware's bit time in ns, from UART1's divisors and clk_peri. */
  get bitNs() {
    const { uart } = this;
    const divider = uart.intDivisor + uart.fracDivisor / 64;
    if (!divider) this.emulator.refuse('UART1 sends with no baud divisor set');
    return (16 * divider * 1e9) / this.emulator.mcu.clkPeri;
  }

  pendingTx() {
    const now = this.emulator.nowNs;
    while (this.txStarts.length && this.txStarts[0] <= now) this.txStarts.shift();
    return this.txStarts.length;
  }

  transmit(byte) {
    const em = this.emulator;
    em.trace?.(`UART1 TX 0x${byte.toString(16)} written at ${em.nowNs} ns`);
    const capacity = this.uart.lineCtrlRegister & UARTLCR_H_FEN ? 32 : 1;
    if (this.pendingTx() >= capacity) {
      this.dropped++;
      return; // silicon drops a write to a full FIFO
    }
    const bit = this.bitNs;
    const start = Math.max(Math.ceil(em.nowNs / 8) * 8, this.txFreeNs);
    this.txFreeNs = start + 10 * bit;
    this.txStarts.push(start);
    this.frame(this.txPin, byte, start, bit);
    em.at(start, () => this.onTxStart?.(byte, start, bit));
  }

  /** Schedules a frame's waveform on `pin`: start bit at `start`, 8N1. */
  frame(pin, byte, start, bit) {
    const em = this.emulator;
    em.at(start, () => drive(em, pin, 0));
    for (let i = 0; i < 8; i++) {
      const value = (byte >> i) & 1;
      em.at(start + (i + 1) * bit, () => drive(em, pin, value));
    }
    em.at(start + 9 * bit, () => drive(em, pin, 1));
  }

  /** A byte from the target: its start bit at `start` ns; returns the frame's end. */
  receive(byte, start, bit) {
    this.frame(this.rxPin, byte, start, bit);
    this.emulator.at(start + 9.5 * bit, () => {
      const { uart } = this;
      const ready = uart.ctrlRegister & UARTCR_UARTEN && uart.ctrlRegister & UARTCR_RXE;
      if (!ready || uart.rxFIFO.full) {
        this.rxDropped++;
        this.emulator.trace?.(`UART1 RX 0x${byte.toString(16)} dropped (receiver off or full)`);
        return;
      }
      this.emulator.trace?.(`UART1 RX 0x${byte.toString(16)} delivered at ${this.emulator.nowNs} ns`);
      uart.feedByte(byte);
    });
    return start + 10 * bit;
  }
}

/**
 * uart-echo with identity bytes: each byte the firmware sends is echoed,
 * its start bit the next latency after the sent byte's start bit (the
 * latency the firmware measures, TX start bit on GP4 to RX start bit on
 * GP5); an `x` sends nothing. `bitNs` is the target's bit time (default: the
 * firmware's). A latency shorter than the 9.5 bit times it takes to receive
 * the byte is refused: no target can echo a byte before it has it.
 */
export class UartEcho {
  constructor(emulator, latencies, { bitNs = null } = {}) {
    this.line = new UartLine(emulator);
    this.latencies = latencies;
    this.rxFreeNs = 0;
    this.sent = 0;
    this.answers = 0;
    this.line.onTxStart = (byte, start, firmwareBit) => {
      this.sent++;
      const latency = latencies.next();
      if (latency === null) return;
      if (latency < 9.5 * firmwareBit) {
        emulator.refuse(
          `uart-echo latency ${latency} ns is shorter than the 9.5 bit times (${9.5 * firmwareBit} ns) a target ` +
            'needs to receive the byte it echoes: no real target can answer it (the firmware counts such an ' +
            'echo as a late answer to an earlier stimulus)',
        );
      }
      this.answers++;
      const bit = bitNs ?? firmwareBit;
      const at = Math.max(start + latency, this.rxFreeNs);
      this.rxFreeNs = this.line.receive(byte, at, bit);
    };
  }
}

/**
 * periodic: the response line toggles (or, with line 'uart', a byte is sent
 * on GP5: 0, 1, 2, … modulo 256) at k × period × (1 + ppm / 1e6) ns, k = 1, 2,
 * …, computed from k each time (no accumulated rounding).
 */
export class Periodic {
  constructor(emulator, { periodNs = 1_000_000, ppm = 0, line = 'gpio', bitNs = null } = {}) {
    this.emulator = emulator;
    this.periodNs = periodNs;
    this.scale = 1 + ppm / 1e6;
    this.k = 0;
    this.level = 0;
    this.lineKind = line;
    if (line === 'uart') {
      this.line = new UartLine(emulator);
      this.bitNs = bitNs;
    } else if (line === 'gpio') {
      drive(emulator, PIN.RESPONSE, 0);
    } else {
      throw new Error(`--line ${line}: gpio or uart`);
    }
    this.scheduleNext();
  }
  scheduleNext() {
    const k = ++this.k;
    const at = k * this.periodNs * this.scale;
    this.emulator.at(at, () => {
      if (this.lineKind === 'gpio') {
        this.level ^= 1;
        drive(this.emulator, PIN.RESPONSE, this.level);
      } else {
        this.line.receive((k - 1) & 0xff, at, this.bitNs ?? this.line.bitNs);
      }
      this.scheduleNext();
    });
  }
}

/** loopback: GP2 wired to GP3, GP4's frames to GP5 and UART1 RX, with zero delay. */
export class Loopback {
  constructor(emulator) {
    const stimulus = emulator.mcu.gpio[PIN.STIMULUS];
    const follow = (state) => {
      const value = level(state);
      if (value !== null) drive(emulator, PIN.RESPONSE, value);
    };
    drive(emulator, PIN.RESPONSE, 0);
    follow(stimulus.value);
    stimulus.addListener(follow);
    this.line = new UartLine(emulator);
    this.line.onTxStart = (byte, start, bit) => this.line.receive(byte, start, bit);
  }
}
