// Papers related to a paper, best first: the score and what they share, as `kg related` gives
// them (uses, not mentions). Read from the RELATED relationships a project load writes (the
// top 10 per paper), so it answers in milliseconds at any size.
// Run: kg cypher related-papers --param paper=p-05c5fc60b666 --param limit=5
// @param paper:str  the paper id
// @param limit:int=10  how many related papers to return (at most 10 are stored)
// @param project:str=null  the project (the id `kg neo4j load` prints); unset: every project
MATCH (p:Paper {id: $paper})-[r:RELATED]->(other:Paper)
WHERE $project IS NULL OR p.project = $project
RETURN other.id AS paper, other.label AS label, r.weight AS weight,
       size(r.shared) AS shared_entities, r.shared AS shared
ORDER BY p.project, r.rank
LIMIT $limit
