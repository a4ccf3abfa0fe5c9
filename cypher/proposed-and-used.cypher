// Papers that propose a method (or model, dataset, ...) and the other papers that use it
// (any relation but PROPOSES, mentions included), most used first.
// Run: kg cypher proposed-and-used --param method=LOTOS
// @param method:str=null  one proposed entity (name, alias or id); leave unset for all
// @param limit:int=100  how many rows to return (a page)
// @param skip:int=0  how many rows to skip (the page's start)
// @param project:str=null  the project (the id `kg neo4j load` prints); unset: every project
//
// Read from what a project load writes on each PROPOSES relationship: used_by (the number of
// users), users and how_used (the first 25 by id) and rank (the order below, from an index).
MATCH (proposer:Paper)-[pr:PROPOSES]->(m:Entity)
WHERE pr.rank > 0 AND ($project IS NULL OR m.project = $project)
  AND ($method IS NULL OR m.id = $method OR toLower(m.name) = toLower($method)
   OR any(alias IN m.aliases WHERE toLower(alias) = toLower($method)))
RETURN m.name AS proposed, m.type AS type, proposer.id AS proposed_by,
       proposer.label AS proposer_label, pr.used_by AS used_by_count, pr.users AS used_by,
       pr.how_used AS how_used
ORDER BY pr.rank
SKIP $skip LIMIT $limit
