import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { storesUnderTest } from "../../test/support/postgres.js";
import { fixtureFacts } from "../plan/testing/fixtures.js";
import { openStore, type Store } from "./open-store.js";
import { findSourceFacts, saveSourceFacts } from "./source-facts-rows.js";

const qwen = fixtureFacts("Qwen2.5-7B-Instruct");
const source = "hf://Qwen/Qwen2.5-7B-Instruct@main";

describe.each(storesUnderTest)("the planner's figures kept per source, over $kind", (engine) => {
  let store: Store;
  let drop: () => Promise<void>;

  beforeEach(async () => {
    const fresh = await engine.location();
    drop = fresh.drop;
    store = await openStore(fresh.location);
  });
  afterEach(async () => {
    await store.close();
    await drop();
  });

  it("gives back the figures as they were read, with when, and nothing for a source never read", async () => {
    expect(await findSourceFacts(store.db, source)).toBeUndefined();
    await saveSourceFacts(store.db, source, qwen, "2026-03-01T10:00:00.000Z");
    const kept = await findSourceFacts(store.db, source);
    expect(kept?.read_at).toBe("2026-03-01T10:00:00.000Z");
    // What the memory arithmetic reads comes back whole (fields that were undefined stay so).
    expect(kept?.facts).toEqual(qwen);
    expect(await findSourceFacts(store.db, "hf://Qwen/Qwen2.5-7B-Instruct@other")).toBeUndefined();
  });

  it("keeps only the latest read of a source", async () => {
    await saveSourceFacts(store.db, source, qwen, "2026-03-01T10:00:00.000Z");
    const later = fixtureFacts("Llama-3.1-8B");
    await saveSourceFacts(store.db, source, later, "2026-03-02T10:00:00.000Z");
    const kept = await findSourceFacts(store.db, source);
    expect(kept).toEqual({ facts: later, read_at: "2026-03-02T10:00:00.000Z" });
    expect(await store.db.selectFrom("source_facts").select("source").execute()).toEqual([{ source }]);
  });

  it("gives back nothing for a row that is not JSON (written by hand, cut short)", async () => {
    await store.db.insertInto("source_facts").values({ source, facts: "{not json", read_at: "2026-03-01T10:00:00.000Z" }).execute();
    expect(await findSourceFacts(store.db, source)).toBeUndefined();
  });
});
