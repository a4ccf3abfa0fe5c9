// Techniques and methods by the number of papers using each: the counts `kg techniques`
// prints (uses, not mentions), read from the `users` property a project load writes.
// Run: kg cypher techniques --param limit=20
// @param limit:int=25  how many techniques to return (a page)
// @param skip:int=0  how many to skip (the page's start)
// @param project:str=null  the project (the id `kg neo4j load` prints); unset: every project
MATCH (t:Entity)
WHERE t.users > 0 AND ($project IS NULL OR t.project = $project)
RETURN t.name AS technique, t.type AS type, t.users AS papers, t.id AS id
ORDER BY papers DESC, toLower(technique), id, t.project
SKIP $skip LIMIT $limit
