import { hash } from "node:crypto";
import { laidOutJsonList } from "./json-list-body.js";

/**
 * One item as it is kept: what filters, searches and pages read of it (its
 * facets), and its JSON, as bytes ready to send. Not the whole view: at
 * 5,000 models and 4,000 replicas the views were 14 MB of a server's heap,
 * kept only for the handful of fields a filter reads.
 */
export interface KeptItem<Facets> {
  readonly facets: Facets;
  /** Its own bytes when built; a view into the whole list's answer once KeptItems.body has laid it there. */
  json: Buffer;
}

/**
 * What a kept item is compared by: a digest of the text its view is built
 * from. The texts themselves (a replica's whole view, a model's counts and
 * status) were 4 MB at that size, kept only to be compared.
 */
export function signatureDigest(text: string): string {
  return hash("sha256", text, "base64url");
}

/**
 * Each list item's facets and JSON bytes, kept until what it is built from
 * changes. A whole list keyed on the fleet's revision is rebuilt at nearly
 * every read while nodes beat (one replica in fifty changing each beat moves
 * the revision): with 2,000 models that was 2,000 views built, masked and
 * serialised per request, for the one or two models whose replicas changed.
 * Here an item is built again only when its own signature moves.
 *
 * Kept as bytes, not strings: a megabyte-long JSON string is encoded to
 * UTF-8 again at every write, which cost more than building the list did
 * (about 8 ms of CPU per MB against well under 1 ms to copy kept bytes,
 * side by side on the same loopback socket).
 */
export class KeptItems<View, Facets> {
  #items = new Map<string, { readonly digest: string; readonly item: KeptItem<Facets> }>();

  constructor(private readonly facetsOf: (view: View) => Facets) {}

  /**
   * The kept `items` in order. `signature(item)` says what the item's view
   * is built from (cheap to compute, a string that changes whenever the
   * view would); `build(item)` makes the view. Items not asked for are
   * forgotten, so a removed model takes no memory.
   */
  list<Item>(items: readonly Item[], id: (item: Item) => string, signature: (item: Item) => string, build: (item: Item) => View): KeptItem<Facets>[] {
    const next = new Map<string, { readonly digest: string; readonly item: KeptItem<Facets> }>();
    const kept: KeptItem<Facets>[] = [];
    for (const item of items) {
      const key = id(item);
      const wanted = signatureDigest(signature(item));
      const before = this.#items.get(key);
      const made = before !== undefined && before.digest === wanted ? before : { digest: wanted, item: keptItem(build(item), this.facetsOf) };
      next.set(key, made);
      kept.push(made.item);
    }
    this.#items = next;
    return kept;
  }

  /**
   * The whole list's answer, `{"<field>":[…]}`, after which each item's
   * bytes are a view into it: the answer and the items share one copy, where
   * each item had held one of its own beside it (7 MB at 5,000 models and
   * 4,000 replicas). The answer before is freed once no item points into it.
   */
  body(field: string, items: readonly KeptItem<Facets>[]): Buffer {
    const { body, starts } = laidOutJsonList(field, items.map((item) => item.json));
    items.forEach((item, index) => {
      const start = starts[index] as number;
      item.json = body.subarray(start, start + item.json.length);
    });
    return body;
  }
}

/** A view's facets and JSON bytes. */
export function keptItem<View, Facets>(view: View, facetsOf: (view: View) => Facets): KeptItem<Facets> {
  return { facets: facetsOf(view), json: Buffer.from(JSON.stringify(view)) };
}
