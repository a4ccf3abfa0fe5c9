// The datasets and models most used by papers that use each technique.
// Run: kg cypher datasets-models-per-technique --param technique=transformer
// @param technique:str=null  one technique (name or id); leave unset for every technique
// @param include_mentions:bool=false  also count papers that only mention the technique
// @param limit:int=100  how many rows to return
MATCH (p:Paper)-[r]->(t:Technique)
WHERE (type(r) <> 'MENTIONS' OR $include_mentions)
  AND ($technique IS NULL OR t.id = $technique OR toLower(t.name) = toLower($technique))
MATCH (p)-[:EVALUATED_ON|USES_MODEL]->(x:Entity)
WHERE x:Dataset OR x:Model
WITH t, x, p
ORDER BY p.id
WITH t, x, collect(DISTINCT p.id) AS papers
RETURN t.name AS technique, x.type AS kind, x.name AS name, size(papers) AS paper_count, papers
ORDER BY technique, paper_count DESC, kind, name
LIMIT $limit
