// Why are two papers linked? The shortest paths between them through entities and concepts,
// one per distinct chain of nodes, with the evidence sentence of every paper→entity step.
// Run: kg cypher why-linked --param a=p-05c5fc60b666 --param b=p-c5cb995db8e6
// @param a:str  one paper id
// @param b:str  the other paper id
// @param limit:int=10  how many paths to return
// @param project:str=null  the project (the id `kg neo4j load` prints); unset: every project
MATCH (a:Paper {id: $a}), (b:Paper {id: $b})
WHERE a.project = b.project AND ($project IS NULL OR a.project = $project)
// through extracted relations and the vocabulary, not the derived RELATED/CO_OCCURS
MATCH path = allShortestPaths((a)-[:PROPOSES|USES_TECHNIQUE|USES_MODEL|EVALUATED_ON|RUNS_ON|
  ADDRESSES|IMPROVES|OUTPERFORMS|EXTENDS|MENTIONS|HAS_CONCEPT|BROADER*..6]-(b))
WHERE none(n IN nodes(path)[1..-1] WHERE n:Paper)
WITH path,
     [n IN nodes(path) | CASE WHEN n:Paper THEN n.id ELSE coalesce(n.name, n.label, n.iri) END]
       AS steps,
     size([r IN relationships(path) WHERE type(r) = 'MENTIONS']) AS weak_steps
// prefer a typed relation (USES_TECHNIQUE, ...) over a bare MENTIONS for the same chain
ORDER BY weak_steps, [r IN relationships(path) | type(r)]
WITH steps, collect(path)[0] AS path
RETURN steps,
       [r IN relationships(path) | type(r)] AS relations,
       [r IN relationships(path) WHERE r.evidence IS NOT NULL | r.paper + ': ' + r.evidence]
         AS evidence,
       length(path) AS hops
ORDER BY hops, size([r IN relationships(path) WHERE type(r) = 'MENTIONS']), steps
LIMIT $limit
