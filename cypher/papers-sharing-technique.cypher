// Papers that use a technique or any narrower one (the vocabulary's skos:broader hierarchy).
// Run: kg cypher papers-sharing-technique --param technique=quantization
// In Neo4j Browser: :param technique => 'quantization'  then paste the query.
// @param technique:str  a technique name, alias or entity id, e.g. quantization
// @param include_mentions:bool=false  also list papers that only mention it (negated, contrasted, prior work)
// @param limit:int=100  how many papers to return (a page)
// @param skip:int=0  how many papers to skip (the page's start)
// @param project:str=null  the project (the id `kg neo4j load` prints); unset: every project
//
// The technique is found as an entity (by id, name or alias) and/or as a vocabulary concept
// (by label), so a concept no paper names directly (e.g. "model compression") still works.
MATCH (named:Entity)
WHERE ($project IS NULL OR named.project = $project)
  AND (named.id = $technique
   OR toLower(named.name) = toLower($technique)
   OR any(alias IN named.aliases WHERE toLower(alias) = toLower($technique)))
WITH collect(named) AS named
OPTIONAL MATCH (root:Concept)
WHERE toLower(root.label) = toLower($technique)
   OR any(alias IN root.alt_labels WHERE toLower(alias) = toLower($technique))
   OR any(e IN named WHERE (e)-[:HAS_CONCEPT]->(root))
WITH named, collect(root) AS roots
// every entity whose concept is a root or lies below one
OPTIONAL MATCH (narrower:Entity)-[:HAS_CONCEPT]->(:Concept)-[:BROADER*0..]->(root:Concept)
WHERE root IN roots AND ($project IS NULL OR narrower.project = $project)
WITH named, collect(narrower) AS narrower
WITH named + narrower AS techniques
UNWIND techniques AS technique
WITH DISTINCT technique
MATCH (paper:Paper)-[r]->(technique)
WHERE type(r) <> 'MENTIONS' OR $include_mentions
WITH paper, technique.name AS name, type(r) AS relation
ORDER BY name, relation
WITH paper, collect(DISTINCT name) AS via, collect(DISTINCT relation) AS relations
RETURN paper.id AS paper, paper.label AS label, via, relations
ORDER BY size(via) DESC, paper
SKIP $skip LIMIT $limit
