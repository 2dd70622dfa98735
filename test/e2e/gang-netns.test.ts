import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { NodeView, ReplicaView } from "../../src/protocol/views.js";
import { chat, modelYaml, serverYaml } from "../support/cluster.js";
import { waitFor } from "../support/fake-engine.js";
import { createNetwork, netnsUnavailable, type NamespaceNetwork } from "../support/netns.js";
import { ctlOutput, llmgwBin, startServerProcess, type ServerProcess } from "../support/processes.js";
import { temporaryDirectory } from "../support/temporary-directory.js";

/**
 * A replica over two nodes, the whole path: a server in the test's own
 * namespace on its veth address, and two simulated agents as real processes,
 * each in a network namespace of its own on one fabric (ib0), each reporting
 * its veth address as its address on that fabric. The server places one gang
 * over both; the worker's engine joins the leader's across the veths; the
 * gateway answers through the leader; and kill -9 of the worker's engine
 * fails the whole replica, stops its leader, and a new gang is placed.
 */
const unavailable = netnsUnavailable();

const members = ["node-a", "node-b"] as const;

describe.skipIf(unavailable !== undefined)(`a replica over two nodes whose agents are in two network namespaces${unavailable === undefined ? "" : ` (skipped: ${unavailable})`}`, () => {
  let network: NamespaceNetwork;
  let server: ServerProcess;
  let directory: string;

  const api = async <T,>(route: string): Promise<T> => {
    const response = await fetch(`${server.url}${route}`, { headers: { authorization: `Bearer ${server.token}` } });
    if (!response.ok) throw new Error(`GET ${route}: ${response.status} ${await response.text()}`);
    return (await response.json()) as T;
  };
  const replicas = async () => (JSON.parse(await ctlOutput(server, ["replicas", "--model", "gang", "--json"])) as { replicas: ReplicaView[] }).replicas;
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  /** The simulated engines running in MEMBER's namespace, by pid. */
  function enginesIn(member: string): number[] {
    const listed = spawnSync("ip", ["netns", "pids", network.namespace(member)], { encoding: "utf8" });
    return listed.stdout
      .split(/\s+/)
      .filter(Boolean)
      .map(Number)
      .filter((pid) => {
        try {
          return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").includes("sim-engine");
        } catch {
          return false; // exited meanwhile
        }
      });
  }
  /** Waits up to 25 s for CHECK; a timeout says where the model and its replicas stood. */
  async function explained<T>(check: () => T | undefined | false | Promise<T | undefined | false>, what: string): Promise<T> {
    try {
      return await waitFor(check, 25_000, what, 500);
    } catch (error) {
      const model = await ctlOutput(server, ["model", "show", "gang"]).catch((failure: unknown) => String(failure));
      throw new Error(`${error instanceof Error ? error.message : String(error)}\n${model}\nreplicas: ${JSON.stringify(await replicas().catch(() => []), null, 2)}`);
    }
  }
  /** The peers of the established TCP connections inside MEMBER's namespace, as `ss` lists them. */
  async function peersIn(member: string): Promise<string[]> {
    const listed = await network.runIn(member, ["ss", "-Htn", "state", "established"]);
    expect(listed.code, listed.stderr).toBe(0);
    return listed.stdout
      .split("\n")
      .filter(Boolean)
      .map((line) => (line.trim().split(/\s+/).at(-1) ?? "").replace(/:\d+$/, ""));
  }

  beforeAll(async () => {
    network = createNetwork({ members, root: true, interfaceName: "ib0" });
    directory = temporaryDirectory("llmgw-gang-netns-");
    writeFileSync(path.join(directory, "server.yaml"), serverYaml);
    // On the test's veth address, not loopback: the agents in their namespaces reach it only across their veths.
    server = await startServerProcess({ cwd: directory, dataDir: path.join(directory, "server-data"), args: ["-c", "server.yaml", "--listen", `${network.rootAddress ?? ""}:0`] });
    const joinToken = (JSON.parse(await ctlOutput(server, ["node", "token", "--json"])) as { token: string }).token;
    for (const member of members) {
      const address = network.address(member);
      // The agent's control API and its engines on its veth address, where the server and the gateway reach them.
      // --fabric-address: the veth's address, reported with the interface holding it (ib0) as the node's place on the fabric.
      const child = network.spawnIn(
        member,
        [process.execPath, llmgwBin, "agent", "--server", server.url, "--name", member, "--data-dir", path.join(directory, member),
          "--simulate", "1xH100-80GB@ib0,cpu:8c/32g", "--fabric", "ib0", "--fabric-address", address,
          "--listen", `${address}:0`, "--engine-host", address],
        { env: { LLMGW_JOIN_TOKEN: joinToken, LLMGW_SERVER: undefined, LLMGW_TOKEN: undefined } },
      );
      let output = "";
      child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
      child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
      child.once("exit", (code) => {
        if (code !== null) process.stderr.write(`agent ${member} exited with ${code}:\n${output}\n`);
      });
    }
    await waitFor(async () => {
      const nodes = (await api<{ nodes: NodeView[] }>("/api/v1/nodes")).nodes;
      return nodes.length === members.length && nodes.every((node) => node.state === "ready");
    }, 30_000, "both agents to join over their veths", 200);
  });
  afterAll(async () => {
    // Agents and every engine they started are in the namespaces: teardown kills what runs there, then deletes them.
    // (Unset when beforeAll failed before making them; createNetwork removes its own half-made network.)
    network?.teardown();
    await server?.stop();
  });

  it("joins both agents to the server across their veths, each at its own namespace's address on the fabric", async () => {
    const nodes = (await api<{ nodes: NodeView[] }>("/api/v1/nodes")).nodes;
    expect(nodes.map(({ name, address, fabric, fabric_network }) => ({ name, address: new URL(address).hostname, fabric, fabric_network })).sort((one, other) => one.name.localeCompare(other.name))).toEqual(
      members.map((member) => ({ name: member, address: network.address(member), fabric: "ib0", fabric_network: { address: network.address(member), interface: "ib0" } })),
    );
    // Each agent's connection to the server crosses its veth: the server's address is on the test's side of the bridge.
    for (const member of members) expect(await peersIn(member)).toContain(network.rootAddress);
  });

  it("places one replica across both nodes, answers through the gateway, and replaces the whole gang when the worker's engine is killed", async () => {
    const file = path.join(directory, "gang.yaml");
    writeFileSync(file, modelYaml("gang", "", "{ engine: vllm, source: \"hf://example/gang@main\", gpu_class: h100, gpus: 1, nodes: 2 }"));
    await ctlOutput(server, ["model", "add", "-f", file, "--no-source-check"]);

    const first = await explained(async () => {
      const list = await replicas();
      return list.length === 1 && list[0]?.state === "ready" ? list[0] : undefined;
    }, "one ready replica of the gang");
    const placed = [...(first.members ?? [])].sort((one, other) => one.rank - other.rank);
    expect(placed.map(({ rank, state }) => ({ rank, state }))).toEqual([
      { rank: 0, state: "ready" },
      { rank: 1, state: "ready" },
    ]);
    expect(placed.map((member) => member.node).sort()).toEqual([...members]);
    const [leaderNode, workerNode] = placed.map((member) => member.node) as [string, string];
    expect(first.node).toBe(leaderNode);
    // The worker's engine joined the leader's rendezvous from its own veth address.
    expect(await peersIn(leaderNode)).toContain(network.address(workerNode));

    expect(await chat(server.url, "gang")).toContain("gang");

    const leaderPid = first.members?.find((member) => member.rank === 0)?.pid ?? 0;
    const workerPid = first.members?.find((member) => member.rank === 1)?.pid ?? 0;
    expect(alive(leaderPid) && alive(workerPid)).toBe(true);
    process.kill(workerPid, "SIGKILL");

    // The whole replica fails: its leader is stopped, never left running alone holding its card, and a new gang replaces it.
    await explained(() => !alive(leaderPid), "the broken gang's leader to be stopped");
    const second = await explained(async () => {
      const list = await replicas();
      const ready = list.filter((replica) => replica.state === "ready");
      return ready.length === 1 && ready[0]?.id !== first.id && ready[0]?.members?.length === 2 ? ready[0] : undefined;
    }, "a new gang to be placed and ready");
    expect(second.members?.every((member) => member.pid !== leaderPid && member.pid !== workerPid && member.pid !== null && alive(member.pid))).toBe(true);
    // Nothing of the broken gang is left running: each namespace holds its agent and the new gang's member alone.
    for (const member of second.members ?? []) expect(enginesIn(member.node)).toEqual([member.pid]);
    expect(await chat(server.url, "gang")).toContain("gang");
  }, 90_000);
});
