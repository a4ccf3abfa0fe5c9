// The datasets and models most used by papers that use each technique, a page of techniques
// at a time (most used first, by the users count `kg techniques` prints). Uses are read from
// the USED_WITH relationships a project load writes (the top 10 per technique); with
// include_mentions they are counted from the papers, which takes longer: bind a technique.
// Run: kg cypher datasets-models-per-technique --param technique=transformer
// @param technique:str=null  one technique (name or id); leave unset for every technique
// @param include_mentions:bool=false  also count papers that only mention the technique
// @param limit:int=25  how many techniques to return (a page)
// @param skip:int=0  how many techniques to skip (the page's start)
// @param per_technique:int=10  how many datasets and models to list for each (at most 10)
// @param project:str=null  the project (the id `kg neo4j load` prints); unset: every project
MATCH (t:Technique)
WHERE ($project IS NULL OR t.project = $project)
  AND ($include_mentions OR t.users > 0)
  AND ($technique IS NULL OR t.id = $technique OR toLower(t.name) = toLower($technique))
WITH t
ORDER BY t.users DESC, t.name, t.id
SKIP $skip LIMIT $limit
CALL {
  WITH t
  WITH t WHERE NOT $include_mentions
  MATCH (t)-[w:USED_WITH]->(x:Entity)
  WHERE w.rank <= $per_technique
  RETURN x, w.papers AS papers
  UNION
  WITH t
  WITH t WHERE $include_mentions
  MATCH (p:Paper)-[r]->(t)
  WITH DISTINCT p
  MATCH (p)-[:EVALUATED_ON|USES_MODEL]->(x:Entity)
  WHERE x:Dataset OR x:Model
  WITH x, p
  ORDER BY p.id
  WITH x, collect(DISTINCT p.id) AS papers
  RETURN x, papers
  ORDER BY size(papers) DESC, x.type, x.name
  LIMIT $per_technique
}
RETURN t.name AS technique, x.type AS kind, x.name AS name, size(papers) AS paper_count, papers
ORDER BY t.users DESC, technique, paper_count DESC, kind, name
