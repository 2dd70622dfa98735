import { describe, expect, it } from "vitest";
import { jsonListBody } from "./json-list-body.js";
import { KeptItems } from "./kept-items.js";

describe("KeptItems", () => {
  it("builds an item again only when its signature moves, keeps the order asked for, and forgets items no longer asked for", () => {
    const built: string[] = [];
    const kept = new KeptItems<{ name: string; ready: number }, string>((view) => view.name);
    const list = (items: { name: string; ready: number }[]) =>
      kept
        .list(
          items,
          (item) => item.name,
          (item) => String(item.ready),
          (item) => {
            built.push(item.name);
            return { ...item };
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
    // What is kept beside the bytes is what facetsOf read of the view.
    expect(kept.list([{ name: "a", ready: 0 }], (item) => item.name, (item) => String(item.ready), (item) => item)[0]?.facets).toBe("a");
  });
});

describe("jsonListBody", () => {
  it("joins kept items (whole or in parts) into the list's JSON, with the cursor when paged", () => {
    const items = [Buffer.from('{"name":"a"}'), [Buffer.from('{"name":"b","seen":'), Buffer.from('"now"'), Buffer.from("}")]];
    expect(JSON.parse(jsonListBody("models", items).toString())).toEqual({ models: [{ name: "a" }, { name: "b", seen: "now" }] });
    expect(JSON.parse(jsonListBody("models", [], null).toString())).toEqual({ models: [], next_cursor: null });
    expect(JSON.parse(jsonListBody("nodes", items.slice(0, 1), "abc").toString())).toEqual({ nodes: [{ name: "a" }], next_cursor: "abc" });
  });
});
