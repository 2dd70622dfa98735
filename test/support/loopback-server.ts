import type http from "node:http";
import type { AddressInfo } from "node:net";

/** Starts a test's HTTP server on a free loopback port; answers its base URL (http://127.0.0.1:PORT). */
export async function listenOnLoopback(server: http.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Closes it, cutting connections still open (a stalled download) so the test does not wait on them. */
export async function closeServer(server: http.Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}
