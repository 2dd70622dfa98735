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
  /** Its own bytes when built; a view into the whole list's answer once keptListBody has laid it there. */
  json: Buffer;
}

/**
 * What a kept item is compared by: a digest of the text its view is built
 * from. The texts themselves (a replica's whole view, a model's counts and
 * status) were 4 MB at that size, kept only to be compared.
 */
function signatureDigest(text: string): string {
  return hash("sha256", text, "base64url");
}

/**
 * List items, each kept until what it is built from changes. A whole list
 * keyed on the fleet's revision is rebuilt at nearly every read while nodes
 * beat (one replica in fifty changing each beat moves the revision): with
 * 2,000 models that was 2,000 views built, masked and serialised per
 * request, for the one or two models whose replicas changed. Here an item is
 * built again only when its own signature moves.
 *
 * What an item is depends on its list: a model or replica is a KeptItem (its
 * facets and JSON bytes), a node its JSON in two parts around the one field
 * that moves at every beat.
 */
export class KeptItems<Kept> {
  #items = new Map<string, { readonly digest: string; readonly kept: Kept }>();

  /**
   * The kept items for `sources`, in order. `signature(source)` says what the
   * item is built from (cheap to compute, a string that changes whenever the
   * item would); `build(source)` makes the item. Items not asked for are
   * forgotten, so a removed model takes no memory.
   */
  list<Source>(sources: readonly Source[], id: (source: Source) => string, signature: (source: Source) => string, build: (source: Source) => Kept): Kept[] {
    const next = new Map<string, { readonly digest: string; readonly kept: Kept }>();
    const kept: Kept[] = [];
    for (const source of sources) {
      const key = id(source);
      const wanted = signatureDigest(signature(source));
      const before = this.#items.get(key);
      const made = before !== undefined && before.digest === wanted ? before : { digest: wanted, kept: build(source) };
      next.set(key, made);
      kept.push(made.kept);
    }
    this.#items = next;
    return kept;
  }
}

/**
 * The whole list's answer, `{"<field>":[…]}`, after which each item's bytes
 * are a view into it: the answer and the items share one copy, where each
 * item had held one of its own beside it (7 MB at 5,000 models and 4,000
 * replicas). The answer before is freed once no item points into it.
 *
 * Kept as bytes, not strings: a megabyte-long JSON string is encoded to
 * UTF-8 again at every write, which cost more than building the list did
 * (about 8 ms of CPU per MB against well under 1 ms to copy kept bytes,
 * side by side on the same loopback socket).
 */
export function keptListBody<Facets>(field: string, items: readonly KeptItem<Facets>[]): Buffer {
  const { body, starts } = laidOutJsonList(field, items.map((item) => item.json));
  items.forEach((item, index) => {
    const start = starts[index] as number;
    item.json = body.subarray(start, start + item.json.length);
  });
  return body;
}

/** A view's facets and JSON bytes. */
export function keptItem<View, Facets>(view: View, facetsOf: (view: View) => Facets): KeptItem<Facets> {
  return { facets: facetsOf(view), json: Buffer.from(JSON.stringify(view)) };
}
