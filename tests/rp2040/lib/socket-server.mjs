// A unix socket server for one client, the host side of a bridged link:
// what the device sends before the client connects is kept and sent on
// connection; a second client, or one after the first has gone, is refused
// (a run is one session). The socket appears only once it accepts: it is
// bound under a temporary name and renamed into place (a socket file exists
// from bind(), before listen(), and refuses connections in between).

import fs from 'node:fs';
import net from 'node:net';

export class OneClientSocket {
  /**
   * @param {string} socketPath
   * @param {object} handlers
   * @param {(data: Buffer) => void} handlers.onData the client's bytes
   * @param {() => void} [handlers.onClientClosed]
   */
  constructor(socketPath, { onData, onClientClosed = () => {} }) {
    this.socketPath = socketPath;
    this.client = null;
    this.clientSeen = false;
    this.toHost = [];
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
      socket.on('data', onData);
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

  /** Sends `bytes` to the client, or keeps them until one connects. */
  send(bytes) {
    if (this.client) this.client.write(bytes);
    else this.toHost.push(bytes);
  }

  close() {
    this.server.close();
    this.client?.destroy();
    try {
      fs.unlinkSync(this.socketPath);
    } catch {
      // already gone
    }
  }
}
