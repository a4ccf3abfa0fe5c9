// Pairs of techniques used together in the same papers, most frequent first: the pairs and
// counts `kg techniques` lists, read from the CO_OCCURS relationships a project load writes
// (their sort_key keeps `kg techniques`' order; pages come from an index, not a sort). The
// pairs are those the RDF graph holds (sparql/technique-cooccurrence.rq): used together by 2
// or more papers, the first 1,000 of `kg techniques`' list.
// `kg cypher papers-sharing-technique` lists the papers of one technique.
// Run: kg cypher technique-cooccurrence --param min_papers=2 --param skip=25
// @param min_papers:int=2  only pairs used together in at least this many papers (2 or more)
// @param limit:int=25  how many pairs to return (a page)
// @param skip:int=0  how many pairs to skip (the page's start)
// @param project:str=null  the project (the id `kg neo4j load` prints); unset: every project
MATCH (a:Entity)-[c:CO_OCCURS]->(b:Entity)
WHERE c.sort_key > '' AND c.papers >= $min_papers AND ($project IS NULL OR c.project = $project)
RETURN a.name AS technique, b.name AS with_technique, c.papers AS papers_together
ORDER BY c.sort_key
SKIP $skip LIMIT $limit
