// Papers using a technique (or any narrower one) per year, and their share of the year's
// papers: the counts `kg trends TECHNIQUE` prints (papers without a year are in no row).
// Run: kg cypher technique-trend --param technique=quantization
// In Neo4j Browser: :param technique => 'quantization'  then paste the query.
// @param technique:str  a technique name, alias or entity id, e.g. quantization
// @param include_mentions:bool=false  also count papers that only mention it (negated, contrasted, prior work)
// @param project:str=null  the project (the id `kg neo4j load` prints); unset: every project
//
// The technique is found as in papers-sharing-technique: an entity (by id, name or alias)
// and/or a vocabulary concept (by label), with every entity of a narrower concept.
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
OPTIONAL MATCH (narrower:Entity)-[:HAS_CONCEPT]->(:Concept)-[:BROADER*0..]->(root:Concept)
WHERE root IN roots AND ($project IS NULL OR narrower.project = $project)
WITH named, collect(narrower) AS narrower
WITH named + narrower AS techniques
// each paper using one of them once, whatever the number of them it uses
OPTIONAL MATCH (paper:Paper)-[r]->(technique:Entity)
WHERE technique IN techniques AND paper.year IS NOT NULL
  AND (type(r) <> 'MENTIONS' OR $include_mentions)
WITH collect(DISTINCT paper) AS using
MATCH (any:Paper)
WHERE any.year IS NOT NULL AND ($project IS NULL OR any.project = $project)
WITH using, any.year AS year, count(any) AS papers
RETURN year, papers, size([p IN using WHERE p.year = year]) AS using,
       round(toFloat(size([p IN using WHERE p.year = year])) / papers, 6) AS share
ORDER BY year
