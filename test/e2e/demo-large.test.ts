import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ReplicaView } from "../../src/protocol/views.js";
import { startDemoProcess, stopDemo, type DemoProcess } from "../support/demo-process.js";
import { pasteInShell, pathWithLlmgw } from "../support/paste-in-shell.js";
import { temporaryDirectory } from "../support/temporary-directory.js";

/**
 * `llmgw demo --large`: the demo's fleet with two more simulated nodes of
 * eight H100s on one fabric, and printed lines that add DeepSeek-V3, show it
 * as one replica over both nodes and ask it through the gateway, run pasted
 * into a shell as a newcomer would.
 */
describe("llmgw demo --large", () => {
  let demo: DemoProcess;

  beforeAll(async () => {
    demo = await startDemoProcess(180_000, ["--large"]);
  }, 200_000);

  afterAll(() => stopDemo(demo), 40_000);

  it("adds DeepSeek-V3 by its printed lines, as one replica over both 8× H100 nodes, and it answers through the gateway", async () => {
    const output = demo.output();
    expect(output).toContain("gpu-node-3: 8× H100 80 GB on fabric ib0");
    const lines = output.split("\n");
    const heading = lines.findIndex((line) => line.trimStart().startsWith("DeepSeek-V3 (671B"));
    expect(heading).toBeGreaterThan(0);
    const [add, show, ask] = lines.slice(heading + 1, heading + 4).map((line) => line.trim());
    expect(add).toBe("llmgw ctl model add deepseek-v3 --wait");
    const exported = lines.map((line) => line.trim()).find((line) => line.startsWith("export LLMGW_SERVER=")) as string;
    const paste = async (command: string) => await pasteInShell(`${exported}\n${command}`, temporaryDirectory("llmgw-demo-large-paste-"), pathWithLlmgw(), 150_000);

    const added = await paste(add as string);
    expect(added.code, `${added.stdout}\n${added.stderr}`).toBe(0);
    const shown = await paste(show as string);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/gpu-node-[34] \(rank 0\) \+ gpu-node-[34] \(rank 1\)/);
    const listed = await paste(`${show as string} --json`);
    const [replica] = (JSON.parse(listed.stdout) as { replicas: ReplicaView[] }).replicas;
    expect(replica?.members?.map((member) => member.node).sort()).toEqual(["gpu-node-3", "gpu-node-4"]);
    expect(replica?.state).toBe("ready");

    const asked = await paste(ask as string);
    expect(asked.code, asked.stderr).toBe(0);
    const answer = JSON.parse(asked.stdout) as { model: string; choices: { message: { content: string } }[] };
    expect(answer.model).toBe("deepseek-v3");
    expect(answer.choices[0]?.message.content).not.toBe("");
  }, 200_000);

  it("refuses a surge restart with no room for a second gang, and restarts it in place", async () => {
    const exported = demo.output().split("\n").map((line) => line.trim()).find((line) => line.startsWith("export LLMGW_SERVER=")) as string;
    const paste = async (command: string) => await pasteInShell(`${exported}\n${command}`, temporaryDirectory("llmgw-demo-large-paste-"), pathWithLlmgw(), 150_000);
    const before = (JSON.parse((await paste("llmgw ctl replicas --model deepseek-v3 --json")).stdout) as { replicas: ReplicaView[] }).replicas[0];
    const refused = await paste("llmgw ctl restart --model deepseek-v3");
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("no room to start a replica of deepseek-v3 on its profile two-nodes beside the ones it replaces");
    expect(refused.stderr).toContain("llmgw ctl restart --model deepseek-v3 --in-place");
    const inPlace = await paste("llmgw ctl restart --model deepseek-v3 --in-place --wait --timeout 120s");
    expect(inPlace.code, `${inPlace.stdout}\n${inPlace.stderr}`).toBe(0);
    const after = (JSON.parse((await paste("llmgw ctl replicas --model deepseek-v3 --json")).stdout) as { replicas: ReplicaView[] }).replicas.filter((replica) => replica.state === "ready");
    expect(after).toHaveLength(1);
    expect(after[0]?.id).not.toBe(before?.id);
    expect(after[0]?.members?.map((member) => member.node).sort()).toEqual(["gpu-node-3", "gpu-node-4"]);
  }, 200_000);
});
