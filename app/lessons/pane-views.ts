// The views a lesson pane shows beyond those its chapter lists.

/** The heatmaps' hint says a clicked tile shows its numbers: the Tile numbers view (empty until a click) follows them. */
export function withTileNumbers(views: readonly string[]): string[] {
  const at = views.indexOf('heatmaps');
  return at < 0 || views.includes('zoom') ? [...views] : [...views.slice(0, at + 1), 'zoom', ...views.slice(at + 1)];
}
