import { isPortFree } from "../agent/index.js";
import { parseListen } from "../catalog/index.js";

/** The server's listen address: the asked one, or a free port beside it when that one is taken (a newcomer should not have to pick). */
export async function availableListen(listen: string, say: (line: string) => void): Promise<string> {
  const { host, port } = parseListen(listen, "--listen");
  if (port === 0 || (await isPortFree(port))) return listen;
  say(`port ${port} on ${host} is taken; using a free port instead (choose one with --listen)`);
  return `${host}:0`;
}

/** 1 s, doubled per exit in a row, at most 30 s: a crash loop neither spins nor leaves a node down for long. */
export function agentRestartDelayMs(exitsInARow: number): number {
  return Math.min(30_000, 1000 * 2 ** Math.max(0, Math.min(exitsInARow - 1, 5)));
}
