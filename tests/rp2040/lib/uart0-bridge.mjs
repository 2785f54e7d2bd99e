// UART0 (GP0/GP1), the Pico's second host link (a debug probe's UART
// bridge on a bench), bridged to a unix socket: what the firmware writes to
// UART0 goes to the client, and the client's bytes reach UART0's receiver
// paced at the link's baud rate (10 bits a byte, 8N1), as a bridge's wire
// would bring them. rp2040js's UART0 moves bytes without pins or timing:
// the harness adds only the pacing of what it receives, never of what it
// sends (the firmware's TX FIFO empties at once; see GAPS.md).

import { OneClientSocket } from './socket-server.mjs';

export class Uart0Bridge {
  /**
   * @param {Emulator} emulator
   * @param {string} socketPath
   * @param {object} options
   * @param {number} options.baud the host link's rate (921600, the firmware's)
   * @param {() => void} [options.onClientClosed]
   */
  constructor(emulator, socketPath, { baud, onClientClosed = () => {} }) {
    this.emulator = emulator;
    this.uart = emulator.mcu.uart[0];
    this.byteNs = (10 * 1e9) / baud;
    this.bytesIn = 0;
    this.bytesOut = 0;
    /** Simulated time the receiver's wire is free again. */
    this.wireFreeNs = 0;
    this.uart.onByte = (byte) => {
      this.bytesOut += 1;
      this.socket.send(Buffer.from([byte]));
    };
    this.socket = new OneClientSocket(socketPath, {
      onData: (data) => {
        this.bytesIn += data.length;
        for (const byte of data) {
          const at = Math.max(this.wireFreeNs, this.emulator.nowNs) + this.byteNs;
          this.wireFreeNs = at;
          this.emulator.at(at, () => this.uart.feedByte(byte));
        }
      },
      onClientClosed,
    });
    this.listening = this.socket.listening;
  }

  close() {
    this.socket.close();
  }
}
