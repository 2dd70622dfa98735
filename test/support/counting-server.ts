import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * An HTTP server on loopback that answers 200 to everything and counts what it
 * was asked: where a probe would go, to show whether one was sent. Closed by
 * `closeCountingServers` (an afterEach of the test file).
 */
const servers: http.Server[] = [];

export async function countingServer(): Promise<{ port: number; asked: () => number }> {
  let asked = 0;
  const server = http.createServer((_request, response) => {
    asked += 1;
    response.end("ok");
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: (server.address() as AddressInfo).port, asked: () => asked };
}

export function closeCountingServers(): void {
  for (const server of servers.splice(0)) server.close();
}
