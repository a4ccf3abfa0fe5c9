// Papers that propose a method (or model, dataset, ...) and the other papers that use it.
// Run: kg cypher proposed-and-used --param method=LOTOS
// @param method:str=null  one proposed entity (name, alias or id); leave unset for all
// @param limit:int=100  how many rows to return (a page)
// @param skip:int=0  how many rows to skip (the page's start)
// @param project:str=null  the project (the id `kg neo4j load` prints); unset: every project
MATCH (proposer:Paper)-[:PROPOSES]->(m:Entity)
WHERE ($project IS NULL OR m.project = $project)
  AND ($method IS NULL OR m.id = $method OR toLower(m.name) = toLower($method)
   OR any(alias IN m.aliases WHERE toLower(alias) = toLower($method)))
OPTIONAL MATCH (user:Paper)-[r]->(m)
WHERE user <> proposer AND type(r) <> 'PROPOSES'
WITH proposer, m, user, r
ORDER BY user.id, type(r)
WITH proposer, m, user, collect(DISTINCT type(r)) AS how
WITH proposer, m,
     [u IN collect(CASE WHEN user IS NULL THEN null ELSE {paper: user.id, via: how} END)
      WHERE u IS NOT NULL] AS users
RETURN m.name AS proposed, m.type AS type, proposer.id AS proposed_by,
       proposer.label AS proposer_label, size(users) AS used_by_count,
       [u IN users | u.paper] AS used_by,
       [u IN users | u.paper + ' (' + reduce(s = '', t IN u.via | s + CASE s WHEN '' THEN '' ELSE ', ' END + t) + ')'] AS how_used
ORDER BY used_by_count DESC, proposed, proposed_by
SKIP $skip LIMIT $limit
