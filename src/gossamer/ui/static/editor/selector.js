// CSS selectors generalised from clicked examples, as SelectorGadget does: the examples'
// common tag and classes, then, while rejected elements still match, an ancestor of the
// examples (nearest first), then :not() of a class only the rejected ones have. Positions
// (nth-child) are a last resort. Selectors use tags, classes and combinators only, so the
// crawl's CSS engine (lexbor) reads them as the browser does.

const CLASS = /^[A-Za-z_][A-Za-z0-9_-]*$/;
const MAX_DEPTH = 5;

function classes(el) {
  return [...el.classList].filter((c) => CLASS.test(c));
}

function tag(el) {
  return el.localName.toLowerCase();
}

function step(tagName, names) {
  return (tagName || "*") + names.map((c) => "." + c).join("");
}

function intersect(lists) {
  if (!lists.length) return [];
  return lists.reduce((a, b) => a.filter((x) => b.includes(x)));
}

function common(elements) {
  const tags = new Set(elements.map(tag));
  return { tag: tags.size === 1 ? [...tags][0] : null, classes: intersect(elements.map(classes)) };
}

// The elements `selector` selects: in the document, or in each scope element (the scope
// itself included when it fits, as the crawl's record fields do).
export function select(doc, selector, scopes = null) {
  try {
    if (!scopes) return [...doc.querySelectorAll(selector)];
    const found = new Set();
    for (const scope of scopes) {
      if (scope.matches(selector)) found.add(scope);
      for (const el of scope.querySelectorAll(selector)) found.add(el);
    }
    return [...found];
  } catch {
    return [];
  }
}

function ancestorsOf(el, stop) {
  const chain = [];
  let node = el.parentElement;
  while (node && node !== stop && chain.length < MAX_DEPTH && tag(node) !== "html") {
    if (tag(node) === "body") break;
    chain.push(node);
    node = node.parentElement;
  }
  return chain;
}

function bases(positives) {
  const { tag: t, classes: cs } = common(positives);
  const out = [];
  if (t || cs.length) out.push(step(t, cs));
  for (const c of cs) out.push(step(t, [c]));
  if (t) out.push(t);
  return [...new Set(out)];
}

function ancestorSteps(positives, scopeOf) {
  // Ancestors at the same depth above every example, described by their common part.
  const chains = positives.map((p) => ancestorsOf(p, scopeOf(p)));
  const depth = Math.min(...chains.map((c) => c.length));
  const steps = [];
  for (let d = 0; d < depth; d += 1) {
    const { tag: t, classes: cs } = common(chains.map((c) => c[d]));
    if (t || cs.length) steps.push(step(t, cs));
    if (t && cs.length) steps.push(t);
  }
  return [...new Set(steps)];
}

function onlyNegativeClasses(positives, negatives) {
  const kept = new Set(positives.flatMap(classes));
  return [...new Set(negatives.flatMap(classes))].filter((c) => !kept.has(c));
}

function positional(el, stop) {
  const parts = [];
  let node = el;
  while (node && node !== stop && tag(node) !== "html" && parts.length < 12) {
    const parent = node.parentElement;
    const same = parent ? [...parent.children].filter((c) => tag(c) === tag(node)) : [node];
    const nth = same.length > 1 ? `:nth-of-type(${same.indexOf(node) + 1})` : "";
    parts.unshift(tag(node) + nth);
    if (tag(node) === "body") break;
    node = parent;
  }
  return parts.join(" > ");
}

// The selector for `positives` that leaves out `negatives`; `scopes`: the record containers
// a field is read in (null: the page).
export function generalise(doc, positives, negatives = [], scopes = null) {
  if (!positives.length) return "";
  const scopeOf = (el) => (scopes ? scopes.find((s) => s.contains(el)) || null : null);
  const fits = (selector) => {
    const found = new Set(select(doc, selector, scopes));
    return positives.every((p) => found.has(p)) && !negatives.some((n) => found.has(n));
  };
  const candidates = [...bases(positives)];
  const firstBase = candidates[0];
  if (!negatives.length && fits(firstBase)) return firstBase;
  const ancestors = ancestorSteps(positives, scopeOf);
  for (const base of bases(positives)) {
    for (const anc of ancestors) candidates.push(`${anc} ${base}`, `${anc} > ${base}`);
  }
  for (const c of onlyNegativeClasses(positives, negatives)) {
    candidates.push(`${firstBase}:not(.${c})`);
  }
  for (const candidate of candidates) if (fits(candidate)) return candidate;
  const union = positives.map((p) => positional(p, scopeOf(p)));
  return [...new Set(union)].join(", ");
}
