// The datasets and models used by papers that use each technique, a page of techniques at a
// time (most used first, by the users count `kg techniques` prints).
// Run: kg cypher datasets-models-per-technique --param technique=transformer
// @param technique:str=null  one technique (name or id); leave unset for every technique
// @param include_mentions:bool=false  also count papers that only mention the technique
// @param limit:int=25  how many techniques to return (a page)
// @param skip:int=0  how many techniques to skip (the page's start)
// @param project:str=null  the project (the id `kg neo4j load` prints); unset: every project
MATCH (t:Technique)
WHERE ($project IS NULL OR t.project = $project)
  AND ($include_mentions OR t.users > 0)
  AND ($technique IS NULL OR t.id = $technique OR toLower(t.name) = toLower($technique))
WITH t
ORDER BY t.users DESC, t.name, t.id, t.project
SKIP $skip LIMIT $limit
MATCH (p:Paper)-[r]->(t)
WHERE type(r) <> 'MENTIONS' OR $include_mentions
MATCH (p)-[:EVALUATED_ON|USES_MODEL]->(x:Entity)
WHERE x:Dataset OR x:Model
WITH t, x, p
ORDER BY p.id
WITH t, x, collect(DISTINCT p.id) AS papers
RETURN t.name AS technique, x.type AS kind, x.name AS name, size(papers) AS paper_count, papers
ORDER BY t.users DESC, technique, paper_count DESC, kind, name
