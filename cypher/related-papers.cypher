// Papers related to a paper, ranked by how many entities they share with it.
// Run: kg cypher related-papers --param paper=p-05c5fc60b666 --param limit=5
// @param paper:str  the paper id
// @param limit:int=10  how many related papers to return
// @param include_mentions:bool=false  also count entities a paper only mentions
MATCH (p:Paper {id: $paper})-[r1]->(shared:Entity)<-[r2]-(other:Paper)
WHERE other <> p
  AND ($include_mentions OR (type(r1) <> 'MENTIONS' AND type(r2) <> 'MENTIONS'))
WITH other, shared
ORDER BY shared.name
WITH other, collect(DISTINCT shared.name) AS shared
RETURN other.id AS paper, other.label AS label, size(shared) AS shared_entities, shared
ORDER BY shared_entities DESC, paper
LIMIT $limit
