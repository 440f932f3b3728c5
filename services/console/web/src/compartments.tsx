// The compartment tree: the tenancy's root and every compartment below it, from one ListCompartments call
// (compartmentIdInSubtree), as nested lists of links.

import type { Client, Compartment } from "@ferry-mq/sdk";
import { Show, useAsync } from "./ui.tsx";

export function CompartmentTree({ client, rootId, selected, linkTo }: {
  client: Client;
  rootId: string;
  selected: string;
  linkTo: (id: string) => string;
}) {
  const [all, reload] = useAsync(async () => {
    const items: Compartment[] = [];
    for await (const c of client.paginate("/20210201/compartments", {
      params: { query: { compartmentId: rootId, compartmentIdInSubtree: true, lifecycleState: "ACTIVE", limit: 1000 } },
    })) {
      items.push(c);
    }
    return items;
  }, [rootId]);
  return (
    <nav aria-label="Compartments" class="tree">
      <h2 class="side-title">Compartments</h2>
      <Show value={all} what="compartments" onRetry={reload}>
        {(items) => {
          const children = new Map<string, Compartment[]>();
          for (const c of items) {
            if (c.id === rootId) continue;
            const parent = c.compartmentId ?? rootId;
            children.set(parent, [...(children.get(parent) ?? []), c]);
          }
          for (const list of children.values()) list.sort((a, b) => a.name.localeCompare(b.name));
          const branch = (id: string, depth: number): preact.JSX.Element | null => {
            const kids = children.get(id);
            if (!kids?.length || depth > 20) return null;
            return (
              <ul>
                {kids.map((c) => (
                  <li key={c.id}>
                    <a href={linkTo(c.id)} aria-current={c.id === selected ? "page" : undefined}>
                      {c.name}
                    </a>
                    {branch(c.id, depth + 1)}
                  </li>
                ))}
              </ul>
            );
          };
          return (
            <ul>
              <li>
                <a href={linkTo(rootId)} aria-current={rootId === selected ? "page" : undefined}>
                  root (tenancy)
                </a>
                {branch(rootId, 0)}
              </li>
            </ul>
          );
        }}
      </Show>
    </nav>
  );
}
