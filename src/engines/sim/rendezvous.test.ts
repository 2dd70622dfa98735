import { connect, createServer, type AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../../../test/support/fake-engine.js";
import { joinRendezvous, RendezvousLeader, RendezvousRefused, type RendezvousMember } from "./rendezvous.js";

const open: { close(): unknown }[] = [];
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close();
});

async function leaderOf(nodes: number) {
  const logLines: string[] = [];
  const leader = await RendezvousLeader.open({ nodes, address: "127.0.0.1", port: 0, log: (line) => logLines.push(line) });
  open.push(leader);
  return { leader, logLines };
}

async function join(leader: RendezvousLeader, rank: number, nodes = leader.nodes): Promise<RendezvousMember> {
  const member = await joinRendezvous({ address: "127.0.0.1", port: leader.port, rank, nodes, timeoutMs: 5000, retryMs: 20, log: () => undefined });
  open.push(member);
  return member;
}

describe("the simulated engines' rendezvous over TCP", () => {
  it("is whole only once every worker rank has joined", async () => {
    const { leader, logLines } = await leaderOf(3);
    expect(leader.trouble).toBe(`waiting for ranks 1, 2 of 3 to join at 127.0.0.1:${leader.port}`);
    await join(leader, 2);
    expect(leader.trouble).toBe(`waiting for rank 1 of 3 to join at 127.0.0.1:${leader.port}`);
    await join(leader, 1);
    expect(leader.trouble).toBeUndefined();
    expect(leader.broken.aborted).toBe(false);
    expect(logLines.at(-1)).toMatch(/rank 1 of 3 joined from 127\.0\.0\.1:\d+; all ranks joined, serving/);
  });

  it("refuses a rank already taken and another world size, saying which", async () => {
    const { leader, logLines } = await leaderOf(2);
    await join(leader, 1);
    await expect(join(leader, 1)).rejects.toThrow(new RendezvousRefused("rank 1 has already joined: two members were given the same --node-rank"));
    await expect(join(leader, 1, 4)).rejects.toThrow(/rank 1 says the world size is 4, this leader was started with --nnodes 2/);
    await expect(join(leader, 0)).rejects.toThrow(/rank 0 is not a worker rank of 2 nodes \(1 to 1\)/);
    expect(logLines.filter((line) => line.includes("rendezvous refused"))).toHaveLength(3);
    // The refusals took nothing from the member that joined first.
    expect(leader.trouble).toBeUndefined();
  });

  it("refuses a stranger that does not speak the protocol", async () => {
    const { leader, logLines } = await leaderOf(2);
    const answer = await new Promise<string>((resolve) => {
      const socket = connect({ host: "127.0.0.1", port: leader.port }, () => socket.write("GET / HTTP/1.1\r\n\r\n"));
      let text = "";
      socket.on("data", (chunk) => (text += chunk.toString()));
      socket.on("close", () => resolve(text));
    });
    expect(answer).toContain('"refused":"expected {\\"rank\\": R, \\"world_size\\": N} on one line');
    expect(logLines.some((line) => line.includes("rendezvous refused"))).toBe(true);
  });

  it("breaks for good when a member's connection drops, and takes no one back", async () => {
    const { leader, logLines } = await leaderOf(2);
    const member = await join(leader, 1);
    member.close();
    await waitFor(() => leader.broken.aborted, 5000, "the leader to see its member gone");
    expect(leader.trouble).toMatch(/^rank 1 \(127\.0\.0\.1:\d+\) dropped its connection; the gang is broken$/);
    expect(logLines.at(-1)).toContain("failing the requests in flight and reporting unhealthy");
    await expect(join(leader, 1)).rejects.toThrow(/the gang is broken .*; restart every member/);
  });

  it("tells its members an orderly shutdown from a lost leader", async () => {
    const first = await leaderOf(2);
    const member = await join(first.leader, 1);
    await first.leader.close();
    await expect(member.ended).resolves.toEqual({ kind: "shutdown" });

    // A leader killed with -9: it answered the join, then its connection just goes, with no shutdown line.
    const killed = createServer((socket) => socket.once("data", () => socket.write(`${JSON.stringify({ joined: true })}\n`, () => socket.destroy())));
    await new Promise<void>((resolve) => killed.listen(0, "127.0.0.1", resolve));
    open.push({ close: () => new Promise((resolve) => killed.close(resolve)) });
    const port = (killed.address() as AddressInfo).port;
    const other = await joinRendezvous({ address: "127.0.0.1", port, rank: 1, nodes: 2, timeoutMs: 5000, log: () => undefined });
    await expect(other.ended).resolves.toEqual({ kind: "lost", reason: `the leader at 127.0.0.1:${port} dropped the connection` });
  });

  it("waits for a leader that starts after its worker, and gives up after the timeout", async () => {
    const { leader } = await leaderOf(2);
    const port = leader.port;
    await leader.close();
    await expect(joinRendezvous({ address: "127.0.0.1", port, rank: 1, nodes: 2, timeoutMs: 200, retryMs: 20, log: () => undefined })).rejects.toThrow(
      new RegExp(`no leader answered at 127\\.0\\.0\\.1:${port} within 0 s`),
    );
    const late = joinRendezvous({ address: "127.0.0.1", port, rank: 1, nodes: 2, timeoutMs: 5000, retryMs: 20, log: () => undefined });
    await new Promise((resolve) => setTimeout(resolve, 100));
    const reopened = await RendezvousLeader.open({ nodes: 2, address: "127.0.0.1", port, log: () => undefined });
    open.push(reopened);
    open.push(await late);
    expect(reopened.trouble).toBeUndefined();
  });
});

