// UART0 (GP0/GP1), the Pico's second host link (a debug probe's UART
// bridge on a bench), bridged to a unix socket: what the firmware writes to
// UART0 goes to the client, and the client's bytes reach UART0's receiver
// paced at the link's baud rate (10 bits a byte, 8N1), as a bridge's wire
// would bring them. rp2040js's UART0 moves bytes without pins or timing:
// the harness adds only the pacing of what it receives, never of what it
// sends (the firmware's TX FIFO empties at once; see GAPS.md).

import fs from 'node:fs';
import net from 'node:net';

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
    this.client = null;
    this.clientSeen = false;
    this.toHost = [];
    this.bytesIn = 0;
    this.bytesOut = 0;
    /** Simulated time the receiver's wire is free again. */
    this.wireFreeNs = 0;
    this.uart.onByte = (byte) => {
      this.bytesOut += 1;
      const b = Buffer.from([byte]);
      if (this.client) this.client.write(b);
      else this.toHost.push(b);
    };
    try {
      fs.unlinkSync(socketPath);
    } catch {
      // no stale socket
    }
    this.server = net.createServer((socket) => {
      if (this.client || this.clientSeen) {
        socket.destroy();
        return;
      }
      this.client = socket;
      this.clientSeen = true;
      for (const chunk of this.toHost) socket.write(chunk);
      this.toHost = [];
      socket.on('data', (data) => {
        this.bytesIn += data.length;
        for (const byte of data) {
          const at = Math.max(this.wireFreeNs, this.emulator.nowNs) + this.byteNs;
          this.wireFreeNs = at;
          this.emulator.at(at, () => this.uart.feedByte(byte));
        }
      });
      socket.on('error', () => {});
      socket.on('close', () => {
        this.client = null;
        onClientClosed();
      });
    });
    const temporary = `${socketPath}.${process.pid}.tmp`;
    this.listening = new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(temporary, () => {
        fs.renameSync(temporary, socketPath);
        resolve();
      });
    });
  }

  close() {
    this.server.close();
    this.client?.destroy();
  }
}
