import type { ChildProcess } from "node:child_process";
import OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { testLaunchInput } from "../../src/engines/drivers/test-launch-input.js";
import { vllmDriver } from "../../src/engines/drivers/vllm.js";
import { waitFor } from "../support/fake-engine.js";
import { createNetwork, netnsUnavailable, type NamespaceNetwork } from "../support/netns.js";
import { llmgwBin } from "../support/processes.js";

/**
 * The simulated engine's two ranks as `llmgw sim-engine` processes in two
 * network namespaces, meeting over veths and a bridge rather than loopback:
 * the leader listens only on its own veth address, so the worker in the other
 * namespace can reach it across that link alone. The test's own namespace has
 * an address on the same subnet, from which it checks health and chats.
 */
const unavailable = netnsUnavailable();

const apiPort = 8000;
const rendezvousPort = 29500;
/** 10 tokens a second through two pipeline stages (1 GB a card at 20 GB/s is 20 a stage): a long answer is still streaming when the worker goes. */
const slowDecode = { LLMGW_SIM_WEIGHTS_BYTES_PER_CARD: "1000000000", LLMGW_SIM_BANDWIDTH_GBPS: "20" };

interface Member {
  readonly child: ChildProcess;
  readonly output: () => string;
}

describe.skipIf(unavailable !== undefined)(`a simulated vLLM replica over two network namespaces${unavailable === undefined ? "" : ` (skipped: ${unavailable})`}`, () => {
  let network: NamespaceNetwork;
  const members: Member[] = [];

  beforeAll(() => {
    network = createNetwork({ members: ["leader", "worker"], root: true });
  });
  afterEach(() => {
    for (const { child } of members.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  afterAll(() => network?.teardown());

  /** Starts rank RANK in its namespace, on its veth address, with the command line vLLM's driver writes for it. */
  function startMember(rank: number): Member {
    const member = rank === 0 ? "leader" : "worker";
    const launch = vllmDriver.build(
      testLaunchInput({
        host: network.address(member),
        port: apiPort,
        distributed: { nodes: 2, rank, leaderAddress: network.address("leader"), port: rendezvousPort, networkInterface: network.interfaceName },
      }),
    );
    const child = network.spawnIn(member, [process.execPath, llmgwBin, "sim-engine", "--engine", "vllm", "--", ...launch.argv.slice(1)], {
      env: { ...launch.env, CUDA_VISIBLE_DEVICES: "0", ...slowDecode },
    });
    let output = "";
    child.stdout?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const started = { child, output: () => output };
    members.push(started);
    return started;
  }

  /** Waits for CHECK, and on a timeout says what MEMBER printed. */
  async function until(check: () => Promise<boolean>, what: string, member: Member): Promise<void> {
    try {
      await waitFor(check, 30_000, what, 200);
    } catch (error) {
      throw new Error(`${error instanceof Error ? error.message : String(error)}; it printed:\n${member.output()}`);
    }
  }

  const leaderUrl = () => `http://${network.address("leader")}:${apiPort}`;
  const health = async (url: string) => {
    const response = await fetch(`${url}/health`).catch(() => undefined);
    return response === undefined ? { status: 0, text: "" } : { status: response.status, text: await response.text() };
  };
  const client = () => new OpenAI({ baseURL: `${leaderUrl()}/v1`, apiKey: "not-checked", maxRetries: 0 });

  /** The established connections at the leader's rendezvous port, as `ss` inside its namespace sees them: their peers' addresses. */
  async function rendezvousPeers(): Promise<string[]> {
    const listed = await network.runIn("leader", ["ss", "-Htn", "state", "established", `( sport = :${rendezvousPort} )`]);
    expect(listed.code, listed.stderr).toBe(0);
    return listed.stdout
      .split("\n")
      .filter(Boolean)
      .map((line) => (line.trim().split(/\s+/).at(-1) ?? "").replace(/:\d+$/, ""));
  }

  it("serves only once the worker in the other namespace has joined across the veth", async () => {
    const leader = startMember(0);
    const waiting = `waiting for rank 1 of 2 to join at ${network.address("leader")}:${rendezvousPort}`;
    await until(async () => (await health(leaderUrl())).status !== 0, "the leader's API to answer from the test's namespace", leader);
    expect(leader.output()).toContain(`rank 0 of 2 waiting at ${network.address("leader")}:${rendezvousPort} for rank 1 to join`);
    const before = await health(leaderUrl());
    expect(before.status).toBe(503);
    expect(before.text).toContain(waiting);
    await expect(client().chat.completions.create({ model: "qwen2.5-7b", messages: [{ role: "user", content: "Say hello" }], max_tokens: 4 })).rejects.toMatchObject({ status: 503 });

    const worker = startMember(1);
    await until(async () => (await health(leaderUrl())).status === 200, "the leader to turn healthy", leader);
    // The leader names the address the worker connected from: the worker's own veth address, not loopback.
    expect(leader.output()).toMatch(new RegExp(`rank 1 of 2 joined from ${network.address("worker").replaceAll(".", "\\.")}:\\d+; all ranks joined, serving`));
    expect(await rendezvousPeers()).toEqual([network.address("worker")]);
    expect(await health(`http://${network.address("worker")}:${apiPort}`)).toMatchObject({ status: 200 });
    expect(worker.output()).toContain(`rank 1 of 2 joined the leader at ${network.address("leader")}:${rendezvousPort}`);

    const answer = await client().chat.completions.create({ model: "qwen2.5-7b", messages: [{ role: "user", content: "Say hello" }], max_tokens: 4 });
    expect(answer.choices[0]?.message.content).toContain("qwen2.5-7b");
  });

  it("ends a stream under way with an error and turns unhealthy when the worker is killed with -9", async () => {
    const leader = startMember(0);
    const worker = startMember(1);
    await until(async () => (await health(leaderUrl())).status === 200, "the leader to turn healthy", leader);
    expect(await rendezvousPeers()).toEqual([network.address("worker")]);

    const stream = await client().chat.completions.create({ model: "qwen2.5-7b", messages: [{ role: "user", content: "Tell me a long story" }], max_tokens: 200, stream: true });
    let tokens = 0;
    let failure: unknown;
    try {
      for await (const chunk of stream) {
        if ((chunk.choices[0]?.delta.content ?? "") !== "") tokens += 1;
        // Two tokens in: the stream is under way when the worker goes.
        if (tokens === 2) worker.child.kill("SIGKILL");
      }
    } catch (error) {
      failure = error;
    }
    expect(worker.child.signalCode ?? (await new Promise((resolve) => worker.child.once("exit", (_code, signal) => resolve(signal))))).toBe("SIGKILL");
    expect(failure).toBeInstanceOf(OpenAI.APIError);
    expect((failure as InstanceType<typeof OpenAI.APIError>).message).toMatch(
      new RegExp(`the engine's collective operation failed: rank 1 \\(${network.address("worker").replaceAll(".", "\\.")}:\\d+\\) dropped its connection; the gang is broken`),
    );
    expect(tokens).toBeLessThan(50); // cut short, far from 200 tokens

    const after = await health(leaderUrl());
    expect(after.status).toBe(503);
    expect(after.text).toContain("dropped its connection");
    expect(await rendezvousPeers()).toEqual([]);
  });

  it("ends the worker with an NCCL abort's status when the leader in the other namespace is killed with -9", async () => {
    const leader = startMember(0);
    const worker = startMember(1);
    await until(async () => (await health(leaderUrl())).status === 200, "the leader to turn healthy", leader);
    const exited = new Promise<number | null>((resolve) => worker.child.once("exit", (code) => resolve(code)));
    leader.child.kill("SIGKILL");
    expect(await exited).toBe(134);
    expect(worker.output()).toContain(`rank 1 of 2: the leader at ${network.address("leader")}:${rendezvousPort} dropped the connection; the collective is broken, exiting with status 134`);
  });
});
