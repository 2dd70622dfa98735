import { describe, expect, it } from "vitest";
import { jsonListBody, laidOutJsonList } from "./json-list-body.js";
import { KeptItems, keptItem, keptListBody, type KeptItem } from "./kept-items.js";

describe("KeptItems", () => {
  it("builds an item again only when its signature moves, keeps the order asked for, and forgets items no longer asked for", () => {
    const built: string[] = [];
    const kept = new KeptItems<KeptItem<string>>();
    const list = (items: { name: string; ready: number }[]) =>
      kept
        .list(
          items,
          (item) => item.name,
          (item) => String(item.ready),
          (item) => {
            built.push(item.name);
            return keptItem({ ...item }, (view) => view.name);
          },
        )
        .map((item) => item.json.toString());
    expect(list([{ name: "a", ready: 0 }, { name: "b", ready: 0 }])).toEqual(['{"name":"a","ready":0}', '{"name":"b","ready":0}']);
    const again = list([{ name: "b", ready: 1 }, { name: "a", ready: 0 }]);
    expect(again).toEqual(['{"name":"b","ready":1}', '{"name":"a","ready":0}']);
    expect(built).toEqual(["a", "b", "b"]);
    // b left the list: asked for again later, it is built anew even with the same signature.
    list([{ name: "a", ready: 0 }]);
    list([{ name: "a", ready: 0 }, { name: "b", ready: 1 }]);
    expect(built).toEqual(["a", "b", "b", "b"]);
    // A kept item is what facetsOf read of the view, beside its bytes.
    expect(kept.list([{ name: "c", ready: 0 }], (item) => item.name, (item) => String(item.ready), (item) => keptItem(item, (view) => `${view.name}!`))[0]?.facets).toBe("c!");
  });
});

describe("keptListBody", () => {
  it("lays the items into the whole list's answer, each item's bytes then a view into it", () => {
    // Items past node's pool size (4 KB), so each is built in memory of its own and sharing is the body's doing.
    const note = "x".repeat(5000);
    const kept = new KeptItems<KeptItem<string>>();
    const listed = (ready: number) => kept.list([{ name: "a", ready: 0 }, { name: "b", ready }], (item) => item.name, (item) => String(item.ready), (item) => keptItem({ ...item, note }, (view) => view.name));
    const first = listed(0);
    const before = first.map((item) => item.json.buffer);
    expect(before[0]).not.toBe(before[1]);
    const body = keptListBody("models", first);
    expect(JSON.parse(body.toString())).toEqual({ models: [{ name: "a", ready: 0, note }, { name: "b", ready: 0, note }] });
    for (const item of first) {
      expect(item.json.buffer).toBe(body.buffer);
      expect(item.json.byteOffset).toBeGreaterThanOrEqual(body.byteOffset);
      expect(item.json.byteOffset + item.json.length).toBeLessThanOrEqual(body.byteOffset + body.length);
    }
    // A filtered answer cut from the items reads the same bytes.
    expect(JSON.parse(jsonListBody("models", [first[1]?.json as Buffer]).toString())).toEqual({ models: [{ name: "b", ready: 0, note }] });
    // The next answer: the kept item a moves into it, b is built anew and laid there too.
    const second = listed(1);
    expect(second[0]).toBe(first[0]);
    const next = keptListBody("models", second);
    expect(JSON.parse(next.toString())).toEqual({ models: [{ name: "a", ready: 0, note }, { name: "b", ready: 1, note }] });
    for (const item of second) expect(item.json.buffer).toBe(next.buffer);
  });
});

describe("jsonListBody", () => {
  it("joins kept items (whole or in parts) into the list's JSON, with the cursor when paged", () => {
    const items = [Buffer.from('{"name":"a"}'), [Buffer.from('{"name":"b","seen":'), Buffer.from('"now"'), Buffer.from("}")]];
    expect(JSON.parse(jsonListBody("models", items).toString())).toEqual({ models: [{ name: "a" }, { name: "b", seen: "now" }] });
    expect(JSON.parse(jsonListBody("models", [], null).toString())).toEqual({ models: [], next_cursor: null });
    expect(JSON.parse(jsonListBody("nodes", items.slice(0, 1), "abc").toString())).toEqual({ nodes: [{ name: "a" }], next_cursor: "abc" });
    // Where each item starts, whole or in parts: what answers kept whole point into or patch.
    const { body, starts } = laidOutJsonList("models", items, "abc");
    expect(starts.map((start) => body.toString("utf8", start, start + 21))).toEqual(['{"name":"a"},{"name":', '{"name":"b","seen":"n']);
  });
});
