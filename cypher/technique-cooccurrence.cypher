// Pairs of techniques used together in the same papers, most frequent first.
// Run: kg cypher technique-cooccurrence --param min_papers=2
// @param min_papers:int=2  only pairs that occur in at least this many papers
// @param limit:int=25  how many pairs to return
// @param include_mentions:bool=false  also pair techniques a paper only mentions
MATCH (a:Technique)<-[ra]-(p:Paper)-[rb]->(b:Technique)
WHERE a.id < b.id
  AND ($include_mentions OR (type(ra) <> 'MENTIONS' AND type(rb) <> 'MENTIONS'))
WITH a, b, p
ORDER BY p.id
WITH a, b, collect(DISTINCT p.id) AS papers
WHERE size(papers) >= $min_papers
RETURN a.name AS technique, b.name AS with_technique, size(papers) AS papers_together, papers
ORDER BY papers_together DESC, technique, with_technique
LIMIT $limit
