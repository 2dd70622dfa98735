import { createServer, type Server } from "node:http";
import type { EngineName } from "../../catalog/index.js";
import { EngineArgumentsInvalid } from "../../errors/for-engines.js";
import type { GangArguments } from "./gang-arguments.js";
import { joinRendezvous, RendezvousRefused, type RendezvousMember } from "./rendezvous.js";
import { simCrashExitCode, simLoadFailureExitCode } from "./sim-fault.js";

export const rendezvousTimeoutVariable = "LLMGW_SIM_RENDEZVOUS_TIMEOUT_MS";

/** How long a worker waits for its leader to answer, as torch.distributed's store waits (its default is minutes, not seconds). */
const defaultRendezvousTimeoutMs = 10 * 60 * 1000;

export function rendezvousTimeoutMs(engine: EngineName, environment: Readonly<Record<string, string | undefined>>): number {
  const text = environment[rendezvousTimeoutVariable];
  if (text === undefined || text === "") return defaultRendezvousTimeoutMs;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new EngineArgumentsInvalid(engine, `${rendezvousTimeoutVariable} must be whole milliseconds, 1 or more, got ${JSON.stringify(text)}`);
  return value;
}

export interface GangWorkerOptions {
  readonly engine: EngineName;
  readonly gang: GangArguments;
  readonly host: string;
  readonly port: number;
  readonly timeoutMs: number;
  readonly log: (line: string) => void;
  readonly exit: (code: number) => void;
}

export interface GangWorkerHandle {
  readonly port: number;
  close(): Promise<void>;
}

/**
 * A worker rank (vLLM `--headless`, SGLang `--node-rank` 1 and up): it
 * serves no API. It joins the leader's rendezvous and answers only
 * GET /health on its --port, 200 once joined and 503 before, as SGLang's
 * non-zero ranks do with their health-only server (the agent probes it for
 * SGLang; for a vLLM --headless worker, which serves nothing, its driver gives
 * no health path and the agent goes by the process alone). It exits as the real
 * engine would: 0 when the leader shuts down in order, 134 (an NCCL abort)
 * when the leader's connection is lost, 1 when it never joins.
 */
export async function startGangWorker(options: GangWorkerOptions): Promise<GangWorkerHandle> {
  const { gang, log } = options;
  const name = `rank ${gang.rank} of ${gang.nodes}`;
  let member: RendezvousMember | undefined;
  let closing = false;
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? "/").split("?")[0];
    if (request.method !== "GET" || path !== "/health") {
      response.writeHead(404, { "content-type": "application/json" }).end(JSON.stringify({ error: `${name} is a headless worker: the API is served by rank 0 at ${gang.leaderAddress}` }));
      return;
    }
    const joined = member !== undefined;
    response
      .writeHead(joined ? 200 : 503, { "content-type": "application/json" })
      .end(JSON.stringify({ status: joined ? "ok" : "joining", simulated: true, engine: options.engine, rank: gang.rank, nodes: gang.nodes }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const bound = server.address();
  const port = typeof bound === "object" && bound !== null ? bound.port : options.port;
  log(`llmgw sim-engine: simulated ${options.engine} ${name}, headless (health only on http://${options.host}:${port}/health), joining ${gang.leaderAddress}:${gang.leaderPort}`);

  void joinRendezvous({ address: gang.leaderAddress, port: gang.leaderPort, rank: gang.rank, nodes: gang.nodes, timeoutMs: options.timeoutMs, log })
    .then(async (joined) => {
      if (closing) return joined.close();
      member = joined;
      log(`llmgw sim-engine: ${name} joined the leader at ${gang.leaderAddress}:${gang.leaderPort}`);
      const end = await joined.ended;
      // eslint-disable-next-line @typescript-eslint/no-unnecessary-condition -- close() may have come while the gang ran
      if (closing) return;
      if (end.kind === "shutdown") {
        log(`llmgw sim-engine: ${name}: the leader shut down; exiting`);
        options.exit(0);
      } else {
        log(`llmgw sim-engine: ${name}: ${end.reason}; the collective is broken, exiting with status ${simCrashExitCode}`);
        options.exit(simCrashExitCode);
      }
    })
    .catch((error: unknown) => {
      if (closing) return;
      const refused = error instanceof RendezvousRefused;
      log(`llmgw sim-engine: ${name} cannot join: ${refused ? "the leader refused it: " : ""}${error instanceof Error ? error.message : String(error)}`);
      options.exit(simLoadFailureExitCode);
    });

  return {
    port,
    close: async () => {
      closing = true;
      member?.close();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}
