// Pairs of techniques used together in the same papers, most frequent first (the pairs
// `kg techniques` lists). Read from the CO_OCCURS relationships a project load writes.
// Run: kg cypher technique-cooccurrence --param min_papers=2 --param skip=25
// @param min_papers:int=2  only pairs used together in at least this many papers
// @param limit:int=25  how many pairs to return (a page)
// @param skip:int=0  how many pairs to skip (the page's start)
// @param project:str=null  the project (the id `kg neo4j load` prints); unset: every project
MATCH (a:Entity)-[c:CO_OCCURS]->(b:Entity)
WHERE c.papers >= $min_papers AND ($project IS NULL OR a.project = $project)
WITH a, b, c
ORDER BY c.papers DESC, a.id, b.id, a.project
SKIP $skip LIMIT $limit
// the papers of the page's pairs only: what a paper uses is any relation but MENTIONS
CALL {
  WITH a, b
  MATCH (a)<-[ra]-(p:Paper)-[rb]->(b)
  WHERE type(ra) <> 'MENTIONS' AND type(rb) <> 'MENTIONS'
  WITH DISTINCT p ORDER BY p.id
  RETURN collect(p.id) AS papers
}
RETURN a.name AS technique, b.name AS with_technique, c.papers AS papers_together, papers
