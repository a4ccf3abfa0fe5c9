// Papers related to a paper, ranked by how many entities they share with it.
// Run: kg cypher related-papers --param paper=p-05c5fc60b666 --param limit=5
// @param paper:str  the paper id
// @param limit:int=10  how many related papers to return
MATCH (p:Paper {id: $paper})-->(shared:Entity)<--(other:Paper)
WHERE other <> p
WITH other, shared
ORDER BY shared.name
WITH other, collect(DISTINCT shared.name) AS shared
RETURN other.id AS paper, other.label AS label, size(shared) AS shared_entities, shared
ORDER BY shared_entities DESC, paper
LIMIT $limit
