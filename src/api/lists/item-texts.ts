/**
 * Each list item's view and JSON, kept until what it is built from changes.
 * A whole list keyed on the fleet's revision is rebuilt at nearly every read
 * while nodes beat (one replica in fifty changing each beat moves the
 * revision): with 2,000 models that was 2,000 views built, masked and
 * serialised per request, for the one or two models whose replicas changed.
 * Here an item is built again only when its own signature moves, and the
 * list's body is the kept texts joined.
 */
export class ItemTexts<View> {
  #items = new Map<string, { readonly signature: string; readonly view: View; readonly text: string }>();

  /**
   * The views and JSON texts of `items` in order. `signature(item)` says
   * what the item's view is built from (cheap to compute, a string that
   * changes whenever the view would); `build(item)` makes the view. Items
   * not asked for are forgotten, so a removed model takes no memory.
   */
  list<Item>(items: readonly Item[], id: (item: Item) => string, signature: (item: Item) => string, build: (item: Item) => View): { views: View[]; texts: string[] } {
    const next = new Map<string, { readonly signature: string; readonly view: View; readonly text: string }>();
    const views: View[] = [];
    const texts: string[] = [];
    for (const item of items) {
      const key = id(item);
      const wanted = signature(item);
      const kept = this.#items.get(key);
      const made = kept !== undefined && kept.signature === wanted ? kept : this.#made(wanted, build(item));
      next.set(key, made);
      views.push(made.view);
      texts.push(made.text);
    }
    this.#items = next;
    return { views, texts };
  }

  #made(signature: string, view: View): { readonly signature: string; readonly view: View; readonly text: string } {
    return { signature, view, text: JSON.stringify(view) };
  }
}
