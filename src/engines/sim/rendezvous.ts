import { createServer, connect, type Server, type Socket } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { z } from "zod";

/**
 * The simulated engines' rendezvous over TCP, standing in for the one
 * torch.distributed makes at the leader's master port: every worker
 * connects, says its rank and the world size on one JSON line, and keeps the
 * connection for the life of the replica. The leader is whole once every
 * rank from 1 to N−1 has joined; a connection that closes is a member lost,
 * which breaks the gang for good, as a failed collective operation leaves a
 * real engine dead (NCCL cannot take a rank back into a communicator).
 *
 * Lines, each one JSON object and a newline:
 *   worker → leader  {"rank": R, "world_size": N}
 *   leader → worker  {"joined": true} | {"refused": "why"} | {"shutdown": true}
 */

/** What the serving side needs to know of its gang. */
export interface GangHealth {
  /** Why the leader cannot serve (ranks still missing, or one lost); undefined when the gang is whole. */
  readonly trouble: string | undefined;
  /** Aborted when a member is lost: requests in flight fail, as their collective operation would. */
  readonly broken: AbortSignal;
}

const helloSchema = z.strictObject({ rank: z.number().int().min(0), world_size: z.number().int().min(1) });
const answerSchema = z.union([
  z.strictObject({ joined: z.literal(true) }),
  z.strictObject({ refused: z.string() }),
  z.strictObject({ shutdown: z.literal(true) }),
]);

/** A line longer than this is not our protocol (something else found the port). */
const maxLineBytes = 4096;
/** A connection that says nothing for this long is dropped, so a stray client cannot hold a rank's place. */
const helloTimeoutMs = 10_000;

const send = (socket: Socket, message: object) => socket.write(`${JSON.stringify(message)}\n`);

/** Calls `onLine` for each newline-ended line; `onOverflow` when a line passes maxLineBytes. */
function readLines(socket: Socket, onLine: (line: string) => void, onOverflow: () => void): void {
  let buffered = "";
  socket.setEncoding("utf8");
  socket.on("data", (chunk: string) => {
    buffered += chunk;
    let newline = buffered.indexOf("\n");
    while (newline >= 0) {
      onLine(buffered.slice(0, newline));
      buffered = buffered.slice(newline + 1);
      newline = buffered.indexOf("\n");
    }
    if (buffered.length > maxLineBytes) onOverflow();
  });
}

const ranksText = (ranks: readonly number[]) => (ranks.length === 1 ? `rank ${ranks[0]}` : `ranks ${ranks.join(", ")}`);

/** Rank 0's side: the master port, the members that joined, and whether the gang still holds. */
export class RendezvousLeader implements GangHealth {
  readonly #members = new Map<number, Socket>();
  readonly #broken = new AbortController();
  #lost: string | undefined;
  #closing = false;

  private constructor(
    private readonly server: Server,
    readonly nodes: number,
    readonly address: string,
    readonly port: number,
    private readonly log: (line: string) => void,
  ) {
    server.on("connection", (socket) => this.#greet(socket));
  }

  /** Listens at `address:port` (port 0: a free one) for the N−1 workers of a gang of `nodes`. */
  static async open(options: { nodes: number; address: string; port: number; log: (line: string) => void }): Promise<RendezvousLeader> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(options.port, options.address, () => {
        server.off("error", reject);
        resolve();
      });
    });
    const bound = server.address();
    const port = typeof bound === "object" && bound !== null ? bound.port : options.port;
    const leader = new RendezvousLeader(server, options.nodes, options.address, port, options.log);
    options.log(`llmgw sim-engine: rank 0 of ${options.nodes} waiting at ${options.address}:${port} for ${ranksText(leader.missing)} to join`);
    return leader;
  }

  get broken(): AbortSignal {
    return this.#broken.signal;
  }

  /** Ranks that have not joined yet. */
  get missing(): number[] {
    return Array.from({ length: this.nodes - 1 }, (_, index) => index + 1).filter((rank) => !this.#members.has(rank));
  }

  get trouble(): string | undefined {
    if (this.#lost !== undefined) return this.#lost;
    const missing = this.missing;
    if (missing.length === 0) return undefined;
    return `waiting for ${ranksText(missing)} of ${this.nodes} to join at ${this.address}:${this.port}`;
  }

  #greet(socket: Socket): void {
    const peer = `${socket.remoteAddress ?? "?"}:${socket.remotePort ?? "?"}`;
    socket.setKeepAlive(true, 1000);
    let rank: number | undefined;
    const refuse = (why: string) => {
      this.log(`llmgw sim-engine: rendezvous refused ${peer}: ${why}`);
      send(socket, { refused: why });
      socket.end();
    };
    const helloTimer = setTimeout(() => refuse(`said nothing within ${helloTimeoutMs / 1000} s`), helloTimeoutMs);
    socket.on("close", () => {
      clearTimeout(helloTimer);
      if (rank !== undefined && this.#members.get(rank) === socket) this.#memberLost(rank, peer);
    });
    socket.on("error", () => undefined); // A reset is seen as the close that follows.
    readLines(
      socket,
      (line) => {
        if (rank !== undefined) return; // Nothing more is expected from a member; its connection is what counts.
        clearTimeout(helloTimer);
        let parsed: z.infer<typeof helloSchema>;
        try {
          parsed = helloSchema.parse(JSON.parse(line));
        } catch {
          refuse(`expected {"rank": R, "world_size": N} on one line, got ${JSON.stringify(line.slice(0, 120))}`);
          return;
        }
        const why = this.#admission(parsed.rank, parsed.world_size);
        if (why !== undefined) return refuse(why);
        rank = parsed.rank;
        this.#members.set(rank, socket);
        send(socket, { joined: true });
        const missing = this.missing;
        this.log(
          `llmgw sim-engine: rank ${rank} of ${this.nodes} joined from ${peer}` +
            (missing.length === 0 ? "; all ranks joined, serving" : `; waiting for ${ranksText(missing)}`),
        );
      },
      () => refuse(`sent a line over ${maxLineBytes} bytes`),
    );
  }

  /** Why a member may not join; undefined when it may. */
  #admission(rank: number, worldSize: number): string | undefined {
    if (this.#lost !== undefined) return `the gang is broken (${this.#lost}); restart every member`;
    if (worldSize !== this.nodes) return `rank ${rank} says the world size is ${worldSize}, this leader was started with --nnodes ${this.nodes}: start every member with the same node count`;
    if (rank === 0 || rank >= this.nodes) return `rank ${rank} is not a worker rank of ${this.nodes} nodes (1 to ${this.nodes - 1})`;
    if (this.#members.has(rank)) return `rank ${rank} has already joined: two members were given the same --node-rank`;
    return undefined;
  }

  #memberLost(rank: number, peer: string): void {
    this.#members.delete(rank);
    if (this.#closing || this.#lost !== undefined) return;
    this.#lost = `rank ${rank} (${peer}) dropped its connection; the gang is broken`;
    this.log(`llmgw sim-engine: ${this.#lost}: failing the requests in flight and reporting unhealthy, as a failed collective operation leaves the engine`);
    this.#broken.abort(new Error(this.#lost));
  }

  /** Tells every member the leader is shutting down (they exit 0), then closes the port. */
  async close(): Promise<void> {
    this.#closing = true;
    for (const socket of this.#members.values()) {
      send(socket, { shutdown: true });
      socket.end();
    }
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Why a worker's membership ended: the leader shut down in order, or its connection was lost. */
export type MembershipEnd = { readonly kind: "shutdown" } | { readonly kind: "lost"; readonly reason: string };

export class RendezvousRefused extends Error {
  override readonly name = "RendezvousRefused";
}

/** A worker's side once it has joined: `ended` settles when the leader shuts down or is lost. */
export interface RendezvousMember {
  readonly ended: Promise<MembershipEnd>;
  close(): void;
}

export interface JoinOptions {
  readonly address: string;
  readonly port: number;
  readonly rank: number;
  readonly nodes: number;
  /** Give up after this long without a leader that answers (the leader may start after its workers). */
  readonly timeoutMs: number;
  readonly retryMs?: number;
  readonly log: (line: string) => void;
}

/** One attempt: the socket once joined, RendezvousRefused when the leader refused, another error when it could not be reached. */
function attempt(options: JoinOptions): Promise<RendezvousMember> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: options.address, port: options.port });
    socket.setKeepAlive(true, 1000);
    let joined = false;
    let shutdown = false;
    let settleEnd: (end: MembershipEnd) => void = () => undefined;
    const ended = new Promise<MembershipEnd>((resolveEnd) => (settleEnd = resolveEnd));
    socket.once("connect", () => send(socket, { rank: options.rank, world_size: options.nodes }));
    socket.on("error", (error) => {
      if (!joined) reject(error);
    });
    socket.on("close", () => {
      if (!joined) reject(new Error(`the leader at ${options.address}:${options.port} closed the connection before answering`));
      else settleEnd(shutdown ? { kind: "shutdown" } : { kind: "lost", reason: `the leader at ${options.address}:${options.port} dropped the connection` });
    });
    readLines(
      socket,
      (line) => {
        let answer: z.infer<typeof answerSchema>;
        try {
          answer = answerSchema.parse(JSON.parse(line));
        } catch {
          socket.destroy();
          if (!joined) reject(new RendezvousRefused(`${options.address}:${options.port} does not speak the rendezvous protocol (answered ${JSON.stringify(line.slice(0, 120))})`));
          return;
        }
        if ("refused" in answer) {
          reject(new RendezvousRefused(answer.refused));
          socket.destroy();
        } else if ("joined" in answer) {
          joined = true;
          resolve({ ended, close: () => socket.destroy() });
        } else shutdown = true;
      },
      () => socket.destroy(),
    );
  });
}

/**
 * Joins the leader's rendezvous, retrying while nothing answers at its
 * address (members start in any order) until `timeoutMs`. A refusal is
 * final: a duplicate rank or another world size will not heal by waiting.
 */
export async function joinRendezvous(options: JoinOptions): Promise<RendezvousMember> {
  const deadline = Date.now() + options.timeoutMs;
  let lastError = "";
  let reported = false;
  for (;;) {
    try {
      return await attempt(options);
    } catch (error) {
      if (error instanceof RendezvousRefused) throw error;
      lastError = error instanceof Error ? error.message : String(error);
      if (!reported) {
        options.log(`llmgw sim-engine: rank ${options.rank} of ${options.nodes}: no leader at ${options.address}:${options.port} yet (${lastError}); retrying`);
        reported = true;
      }
    }
    if (Date.now() >= deadline) {
      throw new Error(`no leader answered at ${options.address}:${options.port} within ${Math.round(options.timeoutMs / 1000)} s (last: ${lastError})`);
    }
    await sleep(options.retryMs ?? 250);
  }
}
