import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { resolveModel } from "../catalog/catalog-model.js";
import { modelEntrySchema } from "../catalog/schema.js";
import type { ModelFacts } from "../plan/model-facts.js";
import { fixtureFacts } from "../plan/testing/fixtures.js";
import { openStore, type Store } from "../store/open-store.js";
import { findSourceFacts, saveSourceFacts } from "../store/source-facts-rows.js";
import { temporaryDirectory } from "../../test/support/temporary-directory.js";
import { ModelFactsService } from "./model-facts-service.js";

const qwen = fixtureFacts("Qwen2.5-7B-Instruct");
const source = "hf://Qwen/Qwen2.5-7B-Instruct@main";
const chat = resolveModel(modelEntrySchema.parse({ name: "chat", context: 8192, profiles: [{ name: "h100", engine: "vllm", source, gpu_class: "h100" }] }), "runtime");
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** A reader that answers the fixture's figures while `up`, and fails as an unreachable hub does when not. */
function hub() {
  const state = { up: true, reads: 0 };
  const read = async (asked: string): Promise<ModelFacts> => {
    state.reads += 1;
    if (!state.up) throw new Error(`${asked}: fetch failed (connect ECONNREFUSED 127.0.0.1:9)`);
    return qwen;
  };
  return { state, read };
}

describe("ModelFactsService", () => {
  let store: Store;
  let now: number;

  beforeEach(async () => {
    store = await openStore({ database: undefined, dataDir: temporaryDirectory("llmgw-facts-") });
    now = Date.parse("2026-03-01T10:00:00.000Z");
  });
  afterEach(async () => {
    await store.close();
  });

  it("prices a model's cards once its files were read in the background, and tells who listens when they are in", async () => {
    const { read } = hub();
    const background: string[] = [];
    const facts = new ModelFactsService({ read: async () => Promise.reject(new Error("not the background reader")), readInBackground: async (asked) => (background.push(asked), await read(asked)) });
    let woken = 0;
    facts.whenFactsRead(() => (woken += 1));
    // Not read yet: placement checks card counts and classes only, and a read is queued.
    expect(facts.demandProfiles(chat)[0]?.bytesPerCard).toBeUndefined();
    expect(facts.cardBytes(chat, "h100")).toBeUndefined();
    await settle();
    await settle();
    expect(background).toEqual([source]);
    expect(woken).toBe(1);
    const bytes = facts.cardBytes(chat, "h100");
    expect(bytes?.weights).toBeGreaterThan(14e9);
    expect(bytes?.kvTokens).toBe(8192);
    expect(facts.demandProfiles(chat)[0]?.bytesPerCard).toBe(bytes?.total);
    expect(facts.cardBytes(chat, "no-such-profile")).toBeUndefined();
  });

  it("reads now for a change, keeps what it read, and answers the kept figures, saying so, once the files cannot be read", async () => {
    const { state, read } = hub();
    const facts = new ModelFactsService({ read, store, now: () => now });
    expect(await facts.read(source)).toEqual({ facts: qwen });
    expect((await findSourceFacts(store.db, source))?.read_at).toBe("2026-03-01T10:00:00.000Z");
    state.up = false;
    now += 3_600_000;
    const kept = await facts.read(source);
    expect(kept.facts).toEqual(qwen);
    expect(kept.stored).toEqual({ readAt: "2026-03-01T10:00:00.000Z", unreadable: `${source}: fetch failed (connect ECONNREFUSED 127.0.0.1:9)` });
    // Read again now, not answered from memory: the kept figures stand in only while the files cannot be read.
    expect(state.reads).toBe(2);
  });

  it("throws the reader's own failure for a source whose figures were never kept", async () => {
    const { state, read } = hub();
    state.up = false;
    const facts = new ModelFactsService({ read, store });
    await expect(facts.read(source)).rejects.toThrow("fetch failed (connect ECONNREFUSED 127.0.0.1:9)");
    // Without a store nothing is kept, so nothing stands in later either.
    const unkept = new ModelFactsService({ read: hub().read });
    await unkept.read(source);
    expect(await findSourceFacts(store.db, source)).toBeUndefined();
  });

  it("uses no kept row that is not figures it can read, and throws the reader's failure as with none", async () => {
    await saveSourceFacts(store.db, source, { source, parameters: 7e9 }, "2026-03-01T10:00:00.000Z");
    const { state, read } = hub();
    state.up = false;
    await expect(new ModelFactsService({ read, store }).read(source)).rejects.toThrow("fetch failed");
  });

  it("prices the cards of a model whose files became unreadable with the figures kept, after a restart as before it", async () => {
    const first = hub();
    await new ModelFactsService({ read: first.read, store }).read(source);
    // A new server process on the same store, with the hub out of reach.
    const { state, read } = hub();
    state.up = false;
    const facts = new ModelFactsService({ read, store });
    facts.get(source);
    expect(await facts.whenRead(source, 1000)).toEqual(qwen);
    expect(facts.cardBytes(chat, "h100")?.kvTokens).toBe(8192);
  });
});
