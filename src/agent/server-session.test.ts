import pino from "pino";
import { describe, expect, it } from "vitest";
import { hashToken } from "../auth/tokens.js";
import { DomainError } from "../errors/domain-error.js";
import type { CardInventory, HeartbeatRequest, HeartbeatResponse, Inventory, JoinRequest, JoinResponse, ReplicaStatus, ServerIdentity } from "../protocol/agent-protocol.js";
import { InventoryTracker } from "./inventory-tracker.js";
import type { ServerCallFailure, ServerCallResult } from "./server-client.js";
import { heartbeatDelayMs, ServerSession, type NodeCredential, type SessionReplicas } from "./server-session.js";

const card: CardInventory = { index: 0, uuid: "GPU-0", name: "NVIDIA H100 80GB HBM3", class: "h100", memory_bytes: 80e9, fabric: "nvl0" };
const nodeInventory: Inventory = { hostname: "node", cpu_cores: 8, memory_bytes: 64e9, gpus: [card], engines: ["vllm"], disk_free_bytes: 1e12, simulated: true };
const secret = "control-secret-0123456789";

type Answer<T> = ServerCallResult<T> | (() => ServerCallResult<T>);
const failed = (failure: ServerCallFailure) => ({ ok: false, failure }) as const;
const joinedAnswer = (credential: string): ServerCallResult<JoinResponse> => ({ ok: true, value: { protocol: 1, node: "node-a", credential, control_secret: secret, heartbeat_interval_ms: 700 } });
const beatAnswer: ServerCallResult<HeartbeatResponse> = { ok: true, value: { protocol: 1 } };

/** A session over stand-in calls: each answers from its queue (the last answer repeats), and every call is recorded. */
async function session(options: {
  credential?: string;
  /** The server the credential was used with, when it is not the one the session talks to. */
  heldFor?: { url: string; id: string };
  identity?: ServerCallResult<ServerIdentity>;
  joinToken?: string;
  joins?: Answer<JoinResponse>[];
  beats?: Answer<HeartbeatResponse>[];
  running?: ReplicaStatus[];
  fabricNetwork?: { address: string; interface: string };
}) {
  const joins: JoinRequest[] = [];
  const beats: { credential: string; body: HeartbeatRequest }[] = [];
  const joinAnswers = [...(options.joins ?? [joinedAnswer("credential-from-join-0001")])];
  const beatAnswers = [...(options.beats ?? [beatAnswer])];
  const next = <T>(queue: Answer<T>[]): ServerCallResult<T> => {
    const answer = (queue.length > 1 ? queue.shift() : queue[0]) as Answer<T>;
    return typeof answer === "function" ? answer() : answer;
  };
  const credential: NodeCredential = {
    credential: options.credential,
    controlSecretHash: undefined,
    serverUrl: options.heldFor?.url ?? "http://control:8080/",
    serverId: options.heldFor?.id,
    unverified: options.heldFor !== undefined && options.heldFor.url !== "http://control:8080/",
  };
  const identityAsked: number[] = [];
  const acknowledged: ReplicaStatus[][] = [];
  const replicas: SessionReplicas = {
    list: () => options.running ?? [],
    persisted: () => [],
    scrapeLoad: async () => undefined,
    acknowledge: (delivered) => acknowledged.push([...delivered]),
  };
  let persisted = 0;
  const stoppedWith: DomainError[] = [];
  const created = new ServerSession({
    name: "node-a",
    serverUrl: "http://control:8080/",
    joinToken: options.joinToken,
    address: "http://127.0.0.1:9000",
    fabric: "node-a",
    fabricNetwork: options.fabricNetwork,
    labels: { zone: "a" },
    heartbeatIntervalMs: 2000,
    simulated: false,
    credential,
    stateFile: "/data/agent-state.json",
    calls: {
      identity: async () => {
        identityAsked.push(beats.length);
        return options.identity ?? failed({ kind: "refused", status: 404, message: "not found" });
      },
      join: async (body) => {
        joins.push(body);
        return next(joinAnswers);
      },
      heartbeat: async (held, body) => {
        beats.push({ credential: held, body });
        return next(beatAnswers);
      },
    },
    replicas,
    inventory: await InventoryTracker.start(async () => nodeInventory),
    persist: async () => {
      persisted += 1;
    },
    stopForGood: async (error) => {
      stoppedWith.push(error);
      created.stop();
    },
    logger: pino({ level: "silent" }),
    random: () => 0.5,
  });
  return { session: created, joins, beats, credential, acknowledged, stoppedWith, identityAsked, persisted: () => persisted };
}

const readyReplica = { id: "r1", model: "tiny", profile: "default", engine: "vllm", cards: [0], state: "ready", since: "2026-01-01T00:00:00.000Z" } as const satisfies Partial<ReplicaStatus>;

describe("the agent's session with its server", () => {
  it("joins with its token when it holds no credential, keeps what the join gave, and heartbeats with it in the same beat", async () => {
    const { session: running, joins, beats, credential, persisted } = await session({ joinToken: "join-token-0123456789" });
    await running.beat();
    expect(joins).toEqual([expect.objectContaining({ join_token: "join-token-0123456789", name: "node-a", fabric: "node-a", labels: { zone: "a" }, inventory: nodeInventory })]);
    expect(credential).toMatchObject({ credential: "credential-from-join-0001", controlSecretHash: hashToken(secret), serverUrl: "http://control:8080/" });
    expect(persisted()).toBe(1);
    // The join carried the inventory: the heartbeat after it does not repeat it.
    expect(beats).toEqual([{ credential: "credential-from-join-0001", body: expect.not.objectContaining({ inventory: expect.anything() }) }]);
    expect(beats[0]?.body.control_secret_hash).toBe(hashToken(secret));
    // The join's interval is the one the session beats at from then on.
    expect(running.intervalMs).toBe(700);
    await expect(running.connected).resolves.toBeUndefined();
  });

  it("sends where the node is on its fabric in the join and on every beat, and nothing of it when it was not given", async () => {
    const fabricNetwork = { address: "10.10.0.7", interface: "ib0" };
    const given = await session({ joinToken: "join-token-0123456789", fabricNetwork });
    await given.session.beat();
    await given.session.beat();
    expect(given.joins[0]?.fabric_network).toEqual(fabricNetwork);
    expect(given.beats.map((beat) => beat.body.fabric_network)).toEqual([fabricNetwork, fabricNetwork]);
    const none = await session({ joinToken: "join-token-0123456789" });
    await none.session.beat();
    expect(none.joins[0]).not.toHaveProperty("fabric_network");
    expect(none.beats[0]?.body).not.toHaveProperty("fabric_network");
  });

  it("heartbeats with a saved credential without joining, sending the inventory first, then only the replicas", async () => {
    const { session: running, joins, beats } = await session({ credential: "saved-credential-000001" });
    await running.beat();
    await running.beat();
    expect(joins).toHaveLength(0);
    expect(beats.map((beat) => beat.body.inventory !== undefined)).toEqual([true, false]);
  });

  it("joins again when the server refuses its credential (the server forgot the node) and a join token is at hand", async () => {
    const { session: running, joins, beats, credential } = await session({
      credential: "forgotten-credential-01",
      joinToken: "join-token-0123456789",
      beats: [failed({ kind: "refused", status: 401, message: "unknown node credential" }), beatAnswer],
    });
    await running.beat();
    expect(joins).toHaveLength(1);
    expect(credential.credential).toBe("credential-from-join-0001");
    await expect(running.connected).resolves.toBeUndefined();
    await running.beat();
    expect(beats.at(-1)?.credential).toBe("credential-from-join-0001");
  });

  it("stops for good, saying how to get a token, when its credential is refused and it has no join token", async () => {
    const { session: running, stoppedWith } = await session({ credential: "forgotten-credential-01", beats: [failed({ kind: "refused", status: 401, message: "unknown node credential" })] });
    await running.beat();
    expect(stoppedWith).toHaveLength(1);
    expect(stoppedWith[0]).toMatchObject({ code: "join_refused", message: expect.stringContaining("no join token was given") as string, hint: expect.stringContaining("llmgw ctl node token") as string });
  });

  it("stops for good when its join token is refused, naming the server", async () => {
    const { session: running, stoppedWith } = await session({ joinToken: "wrong-token-0123456789", joins: [failed({ kind: "refused", status: 401, message: "unknown join token" })] });
    await running.beat();
    expect(stoppedWith[0]?.message).toBe("the server at http://control:8080/ refused agent node-a's join: unknown join token");
  });

  it("stops when another live agent holds its name, unless it runs engines of this node (then the other is its dead predecessor)", async () => {
    const taken = failed({ kind: "rejected", status: 409, code: "name_taken", message: "node-a is heartbeating from another address", hint: "Give it another --name." });
    const alone = await session({ joinToken: "join-token-0123456789", joins: [taken] });
    await alone.session.beat();
    expect(alone.stoppedWith[0]).toMatchObject({ code: "name_taken", hint: "Give it another --name." });

    const adopted = await session({ joinToken: "join-token-0123456789", joins: [taken], running: [readyReplica as unknown as ReplicaStatus] });
    await adopted.session.beat();
    expect(adopted.stoppedWith).toHaveLength(0);
    expect(adopted.session.failures).toBe(1);
  });

  it("keeps retrying an unreachable server, counting failures for the backoff, and starts again from the interval once heard", async () => {
    const down = failed({ kind: "unreachable", message: "connect ECONNREFUSED" });
    const { session: running, stoppedWith } = await session({ credential: "saved-credential-000001", beats: [down, down, down, beatAnswer] });
    for (let beat = 0; beat < 3; beat += 1) await running.beat();
    expect(running.failures).toBe(3);
    expect(stoppedWith).toHaveLength(0);
    await running.beat();
    expect(running.failures).toBe(0);
  });

  it("stops for good when the server speaks another protocol version", async () => {
    const version = new DomainError("version_unsupported", "the server speaks agent protocol 2", "Run an agent of the server's release.");
    const { session: running, stoppedWith } = await session({ credential: "saved-credential-000001", beats: [failed({ kind: "version", error: version })] });
    await running.beat();
    expect(stoppedWith).toEqual([version]);
  });

  it("keeps the hash of a control secret the server offers in a heartbeat answer, and saves it", async () => {
    const { session: running, credential, persisted } = await session({ credential: "saved-credential-000001", beats: [{ ok: true, value: { protocol: 1, control_secret: secret } }] });
    await running.beat();
    expect(credential.controlSecretHash).toBe(hashToken(secret));
    expect(persisted()).toBe(1);
  });

  it("acknowledges to the supervisor exactly the replicas a heartbeat delivered", async () => {
    const { session: running, acknowledged } = await session({ credential: "saved-credential-000001", running: [readyReplica as unknown as ReplicaStatus] });
    await running.beat();
    expect(acknowledged).toEqual([[readyReplica]]);
  });

  it("runs one beat at a time: a beat asked for while one runs waits for that one", async () => {
    const { session: running, beats } = await session({ credential: "saved-credential-000001" });
    await Promise.all([running.beat(), running.beat()]);
    expect(beats).toHaveLength(1);
  });
});

describe("the credential at a server's new address", () => {
  const serverId = "a1b2c3d4e5f60718293a4b5c6d7e8f90";
  const movedFrom = { url: "http://10.0.0.5:8080/", id: serverId };

  it("keeps the credential when the server at the new URL presents the identity it was earned from, and saves the new URL", async () => {
    const { session: running, beats, joins, credential, persisted, identityAsked } = await session({
      credential: "saved-credential-000001",
      heldFor: movedFrom,
      identity: { ok: true, value: { protocol: 1, server_id: serverId } },
    });
    await running.beat();
    // Asked before any heartbeat, and only once.
    expect(identityAsked).toEqual([0]);
    expect(joins).toHaveLength(0);
    expect(beats.map((beat) => beat.credential)).toEqual(["saved-credential-000001"]);
    expect(credential).toMatchObject({ serverUrl: "http://control:8080/", serverId, unverified: false });
    expect(persisted()).toBe(1);
    await running.beat();
    expect(identityAsked).toHaveLength(1);
  });

  it("sends nothing to a server of another identity and, with no join token, stops saying what is in force and what to do", async () => {
    const { session: running, beats, joins, stoppedWith, credential } = await session({
      credential: "saved-credential-000001",
      heldFor: movedFrom,
      identity: { ok: true, value: { protocol: 1, server_id: "ffffffffffffffffffffffffffffffff" } },
    });
    await running.beat();
    expect(beats).toHaveLength(0);
    expect(joins).toHaveLength(0);
    expect(stoppedWith[0]?.message).toBe(
      `the server at http://control:8080/ is not the server agent node-a joined: it presents identity ffffffffffffffffffffffffffffffff, while the credential in /data/agent-state.json belongs to server ${serverId} at http://10.0.0.5:8080/; the credential was not sent`,
    );
    expect(stoppedWith[0]?.hint).toContain("start the agent with a join token from it");
    expect(stoppedWith[0]?.hint).toContain("point --server back at http://10.0.0.5:8080/");
    // What the state file keeps: the credential, still for its own server.
    expect(credential).toMatchObject({ credential: "saved-credential-000001", serverUrl: "http://10.0.0.5:8080/", serverId });
  });

  it("sends nothing to a server that tells no identity (an earlier release)", async () => {
    const { session: running, beats, stoppedWith } = await session({ credential: "saved-credential-000001", heldFor: movedFrom });
    await running.beat();
    expect(beats).toHaveLength(0);
    expect(stoppedWith[0]?.message).toContain("it does not tell its identity");
  });

  it("joins a server of another identity with the join token given, dropping the other server's credential unsent", async () => {
    const { session: running, beats, joins, credential } = await session({
      credential: "saved-credential-000001",
      heldFor: movedFrom,
      joinToken: "join-token-0123456789",
      identity: { ok: true, value: { protocol: 1, server_id: "ffffffffffffffffffffffffffffffff" } },
      joins: [{ ok: true, value: { protocol: 1, node: "node-a", credential: "credential-of-new-server", heartbeat_interval_ms: 2000, server_id: "ffffffffffffffffffffffffffffffff" } }],
    });
    await running.beat();
    expect(joins).toHaveLength(1);
    expect(beats.map((beat) => beat.credential)).toEqual(["credential-of-new-server"]);
    expect(credential).toMatchObject({ serverUrl: "http://control:8080/", serverId: "ffffffffffffffffffffffffffffffff", unverified: false });
  });

  it("retries the check while the new address does not answer, sending nothing meanwhile", async () => {
    const { session: running, beats, stoppedWith } = await session({ credential: "saved-credential-000001", heldFor: movedFrom, identity: failed({ kind: "unreachable", message: "connect ECONNREFUSED" }) });
    await running.beat();
    expect(beats).toHaveLength(0);
    expect(stoppedWith).toHaveLength(0);
    expect(running.failures).toBe(1);
  });

  it("learns the identity from a heartbeat answer when it joined a server of an earlier release, and saves it", async () => {
    const { session: running, credential, persisted } = await session({ credential: "saved-credential-000001", beats: [{ ok: true, value: { protocol: 1, server_id: serverId } }] });
    await running.beat();
    expect(credential.serverId).toBe(serverId);
    expect(persisted()).toBe(1);
  });
});

describe("the wait between heartbeats", () => {
  it("is the interval while the server answers, doubles per failure, and never passes 5 s (6 s with jitter)", () => {
    expect(heartbeatDelayMs(0, 2000, () => 0.5)).toBe(2000);
    expect(heartbeatDelayMs(1, 1000, () => 0.5)).toBe(2000);
    expect(heartbeatDelayMs(20, 2000, () => 1)).toBe(6000);
    expect(heartbeatDelayMs(0, 2000, () => 0)).toBe(1600);
  });
});
