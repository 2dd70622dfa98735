import { connect } from "node:tls";

/**
 * Whether what listens at an http:// address answers a TLS handshake: a
 * server configured with `tls:` closes a plain-HTTP connection without a
 * word, which looks like a server that is down. Nothing is sent after the
 * handshake and its certificate is not judged: the answer only chooses the
 * hint, and the next try goes through the usual checks over https://.
 */
export function speaksTls(url: URL, timeoutMs = 3_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: url.hostname.replace(/^\[|\]$/g, ""), port: Number(url.port || 80), rejectUnauthorized: false, timeout: timeoutMs });
    const done = (answer: boolean) => {
      socket.destroy();
      resolve(answer);
    };
    socket.once("secureConnect", () => done(true));
    socket.once("error", () => done(false));
    socket.once("timeout", () => done(false));
  });
}
