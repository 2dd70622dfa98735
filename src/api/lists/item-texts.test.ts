import { describe, expect, it } from "vitest";
import { ItemTexts } from "./item-texts.js";

describe("ItemTexts", () => {
  it("builds an item again only when its signature moves, keeps the order asked for, and forgets items no longer asked for", () => {
    const built: string[] = [];
    const kept = new ItemTexts<{ name: string; ready: number }>();
    const list = (items: { name: string; ready: number }[]) =>
      kept.list(
        items,
        (item) => item.name,
        (item) => String(item.ready),
        (item) => {
          built.push(item.name);
          return { ...item };
        },
      );
    expect(list([{ name: "a", ready: 0 }, { name: "b", ready: 0 }]).texts).toEqual(['{"name":"a","ready":0}', '{"name":"b","ready":0}']);
    const again = list([{ name: "b", ready: 1 }, { name: "a", ready: 0 }]);
    expect(again.texts).toEqual(['{"name":"b","ready":1}', '{"name":"a","ready":0}']);
    expect(built).toEqual(["a", "b", "b"]);
    // b left the list: asked for again later, it is built anew even with the same signature.
    list([{ name: "a", ready: 0 }]);
    list([{ name: "a", ready: 0 }, { name: "b", ready: 1 }]);
    expect(built).toEqual(["a", "b", "b", "b"]);
  });
});
