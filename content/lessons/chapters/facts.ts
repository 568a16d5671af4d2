// The `{{name}}` placeholders of chapter text: found, and filled with the numbers the
// chapter's `facts` computed from the engine.

const PLACEHOLDER = /\{\{([A-Za-z0-9_-]+)\}\}/g;

/** Names of the placeholders in a text, in order of appearance. */
export function placeholdersOf(text: string): string[] {
  return [...text.matchAll(PLACEHOLDER)].map((m) => m[1]);
}

/** The text with every placeholder replaced; one the facts lack (or facts not yet computed) reads "…". */
export function fillFacts(text: string, facts: Record<string, string> | null): string {
  return text.replace(PLACEHOLDER, (_m, name: string) => facts?.[name] ?? '…');
}
