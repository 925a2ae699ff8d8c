"""sqlglot's MySQL dialect, extended where MariaDB and MySQL accept table DDL it cannot read.

One place for the grammar Sluice needs beyond sqlglot's: MariaDB's test suite and real
estates write these every day, and a statement the parser cannot read would otherwise
stop the binlog phase. Each addition either parses what changes the columns (types, their
attributes) or reads past a clause that changes no column (indexes, constraints, table
maintenance), as one `NoColumnChange` naming it.
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.mysql import MySQL
from sqlglot.parsers.mysql import MySQLParser
from sqlglot.tokens import TokenType

SPATIAL_TYPES = frozenset(
    {"GEOMETRY", "POINT", "LINESTRING", "POLYGON", "MULTIPOINT", "MULTILINESTRING", "MULTIPOLYGON"}
    | {"GEOMETRYCOLLECTION", "GEOMCOLLECTION"}
)
NAMED_TYPES = SPATIAL_TYPES | {"INET4", "INET6"}  # read as the type of that name
# ALTER TABLE clauses that change no column: read up to the next clause.
_KEYS_AND_CONSTRAINTS = ("INDEX", "KEY", "UNIQUE", "FULLTEXT", "SPATIAL", "FOREIGN", "CONSTRAINT", "CHECK")
_NO_COLUMN_CLAUSES = {
    ("DISABLE", "KEYS"),
    ("ENABLE", "KEYS"),
    ("DISCARD", "TABLESPACE"),
    ("IMPORT", "TABLESPACE"),
    ("WITH", "SYSTEM"),
    ("WITHOUT", "SYSTEM"),
}


class NoColumnChange(exp.Expression):
    """An ALTER TABLE clause that leaves every column as it is (an index, a constraint, ...)."""

    arg_types = {"this": True}


class ConvertCharset(exp.Expression):
    """CONVERT TO CHARACTER SET cs [COLLATE c]: every string column takes the character set."""

    arg_types = {"this": True, "collation": False}


class MariaDBParser(MySQLParser):
    # FLOAT and REAL UNSIGNED stay FLOAT; `_parse_types` keeps the UNSIGNED in meta.
    SIGNED_TO_UNSIGNED_TYPE_TOKEN = {**MySQLParser.SIGNED_TO_UNSIGNED_TYPE_TOKEN, TokenType.FLOAT: TokenType.FLOAT}

    CONSTRAINT_PARSERS = {
        **MySQLParser.CONSTRAINT_PARSERS,
        # Column attributes that change no layout Sluice reads.
        "COMPRESSED": lambda self: self._attribute("COMPRESSED", value=self._match(TokenType.EQ) and self._parse_var()),
        "SRID": lambda self: self._attribute("SRID", value=self._parse_number()),
        "REF_SYSTEM_ID": lambda self: self._attribute(
            "REF_SYSTEM_ID", value=self._match(TokenType.EQ) and self._parse_number()
        ),
        "SERIAL": lambda self: self._serial_default_value(),
        "WITH": lambda self: self._system_versioning(),
        "WITHOUT": lambda self: self._system_versioning(),
        "BYTE": lambda self: self._attribute("BYTE", value=None),  # CHAR(n) BYTE is BINARY(n)
        "BINARY": lambda self: self._attribute("BINARY", value=None),  # the charset's _bin collation
    }

    PROPERTY_PARSERS = {
        **MySQLParser.PROPERTY_PARSERS,
        # Partitioning places rows, it changes no column: read past it to the statement's end.
        "PARTITION BY": lambda self: self._rest_of_statement("PARTITION BY"),
        "UNION": lambda self: self._no_column_change("UNION"),  # a MERGE table's tables
        "WITH": lambda self: self._system_versioning() or MySQLParser.PROPERTY_PARSERS["WITH"](self),
    }

    ALTER_ALTER_PARSERS = {
        **MySQLParser.ALTER_ALTER_PARSERS,
        "INDEX": lambda self: self._no_column_change("ALTER INDEX"),  # [NOT] IGNORED, [IN]VISIBLE
        "KEY": lambda self: self._no_column_change("ALTER KEY"),
    }

    ALTER_PARSERS = {
        **MySQLParser.ALTER_PARSERS,
        "CONVERT": lambda self: self._parse_convert_charset(),
        **{first: (lambda self: self._no_column_change(self._prev.text.upper())) for first, _ in _NO_COLUMN_CLAUSES},
    }

    def _attribute(self, name: str, value: exp.Expression | None) -> exp.ColumnConstraint:
        return self.expression(NoColumnChange(this=exp.var(f"{name} {value.sql() if value else ''}".strip())))

    def _system_versioning(self) -> exp.Expression | None:
        """[WITH | WITHOUT] SYSTEM VERSIONING, of a table or a column: history rows are kept
        apart from the current ones, whose columns stay as they are."""
        if not self._match_text_seq("SYSTEM", "VERSIONING"):
            return None
        return self.expression(NoColumnChange(this=exp.var("SYSTEM VERSIONING")))

    def _rest_of_statement(self, first: str) -> exp.Expression:
        words = [first]
        while self._curr and self._curr.token_type != TokenType.SEMICOLON:
            words.append(self._curr.text)
            self._advance()
        return self.expression(NoColumnChange(this=exp.var(" ".join(words))))

    def _serial_default_value(self) -> exp.Expression:
        """SERIAL DEFAULT VALUE: NOT NULL AUTO_INCREMENT UNIQUE."""
        self._match_text_seq("DEFAULT", "VALUE")
        return self.expression(exp.NotNullColumnConstraint())

    def _parse_types(self, *args, **kwargs) -> exp.Expression | None:  # type: ignore[override]
        word = self._curr.text.upper() if self._curr else ""
        if word in NAMED_TYPES:
            self._advance()
            return exp.DataType.build(word.lower(), udt=True)
        if word == "NATIONAL":  # NATIONAL CHAR / VARCHAR: utf8mb3 strings, the same layout
            self._advance()
        if word == "LONG" and self._next and self._next.text.upper() in ("VARCHAR", "VARBINARY", "BYTE"):
            self._advance(2)  # LONG VARCHAR is MEDIUMTEXT, LONG VARBINARY and LONG BYTE are MEDIUMBLOB
            return exp.DataType.build("mediumtext" if self._prev.text.upper() == "VARCHAR" else "mediumblob")
        if word == "LONG":
            self._advance()
            return exp.DataType.build("mediumtext")
        if word == "REAL":  # REAL is DOUBLE (unless sql_mode has REAL_AS_FLOAT)
            self._curr.token_type = TokenType.DOUBLE
        this = super()._parse_types(*args, **kwargs)
        if isinstance(this, exp.DataType) and self._prev and self._prev.text.upper() == "UNSIGNED":
            this.meta["unsigned"] = True
        return this

    def _parse_convert_charset(self) -> exp.Expression | None:
        if not self._match_text_seq("TO"):
            return None
        if not (self._match_text_seq("CHARACTER", "SET") or self._match_text_seq("CHARSET")):
            return None
        charset = self._parse_var(any_token=True)
        collation = self._match(TokenType.COLLATE) and self._parse_var(any_token=True)
        return self.expression(ConvertCharset(this=charset, collation=collation or None))

    def _parse_alter_table_add(self) -> list[exp.Expression]:  # type: ignore[override]
        if self._keys_or_constraint() and not self._primary_key_ahead():
            return [self._no_column_change("ADD")]
        if self._match_text_seq("PERIOD", advance=False) or self._match_text_seq("SYSTEM", advance=False):
            return [self._no_column_change("ADD")]
        index = self._index
        self._match(TokenType.COLUMN)
        if self._match(TokenType.L_PAREN):  # ADD [COLUMN] (a INT, b INT): several columns at once
            columns = self._parse_csv(self._parse_column_def_with_exists)
            self._match_r_paren()
            return columns
        self._retreat(index)
        if self._primary_key_ahead():
            return [self._add_primary_key()]
        if self._keys_or_constraint() or self._match_set(self.ADD_CONSTRAINT_TOKENS, advance=False):
            return [self.expression(exp.AddConstraint(expressions=[self._parse_constraint()]))]
        # One clause: the ALTER's own loop reads the next after its comma, with these rules.
        column = self._parse_column_def_with_exists()
        return [column] if column is not None else super()._parse_alter_table_add()

    def _parse_field_def(self) -> exp.Expression | None:
        """A column definition whose name is qualified (`t1.a INT`, `db.t1.a INT`): MySQL
        takes the table's own name before it."""
        while (
            self._curr and self._next and self._next.token_type == TokenType.DOT and self._index + 2 < len(self._tokens)
        ):
            self._advance(2)
        return super()._parse_field_def()

    def _parse_alter_table_rename(self):  # type: ignore[no-untyped-def]
        """RENAME {INDEX|KEY} IF EXISTS a TO b renames an index: no column changes. RENAME
        [TO|AS] t2 renames the table (sqlglot knows TO only)."""
        if self._match_texts(("INDEX", "KEY"), advance=False) and self._next and self._next.text.upper() == "IF":
            return self._no_column_change("RENAME")
        bare = not self._match_texts(("COLUMN", "INDEX", "KEY", "TO"), advance=False)
        if self._match(TokenType.ALIAS) or (bare and not (self._next and self._next.text.upper() == "TO")):
            return self.expression(exp.AlterRename(this=self._parse_table(schema=True)))
        return super()._parse_alter_table_rename()

    def _parse_alter_table_modify(self, rename: bool = False) -> exp.Expression | None:
        """MODIFY and CHANGE [COLUMN] [IF EXISTS]: `exists` in the result's meta says so."""
        index = self._index
        self._match(TokenType.COLUMN)
        exists = self._parse_exists()
        if not exists:
            self._retreat(index)
        modified = super()._parse_alter_table_modify(rename)
        if modified is not None and exists:
            modified.meta["exists"] = True  # sqlglot's ModifyColumn has no such argument
        return modified

    def _parse_alter(self) -> exp.Alter | exp.Command:
        # ALTER [ONLINE] [IGNORE] TABLE: neither changes what the statement does to the layout.
        while self._match_texts(("ONLINE", "IGNORE")):
            pass
        index = self._index
        altered = super()._parse_alter()
        if isinstance(altered, exp.Command) and self._only_table_options(index):
            self._retreat(len(self._tokens))
            return self.expression(exp.Alter(this=self._table_named(index), kind="TABLE", actions=[]))
        return altered

    def _only_table_options(self, index: int) -> bool:
        """ALTER TABLE t, or ALTER TABLE t with table options only (AVG_ROW_LENGTH 10, ...):
        tokens after the name that are words, numbers, = and commas, none a clause keyword."""
        tokens = self._tokens[index:]
        if len(tokens) < 2 or tokens[0].token_type != TokenType.TABLE:
            return False
        rest = tokens[4:] if tokens[2:3] and tokens[2].token_type == TokenType.DOT else tokens[2:]  # after db.name
        clauses = {"ADD", "DROP", "CHANGE", "MODIFY", "RENAME", "ALTER", "CONVERT", "PARTITION", "COALESCE"}
        return all(
            t.text.upper() not in clauses and t.token_type not in (TokenType.L_PAREN, TokenType.R_PAREN) for t in rest
        )

    def _table_named(self, index: int) -> exp.Table:
        tokens = self._tokens[index + 1 :]
        if tokens[1:2] and tokens[1].token_type == TokenType.DOT:
            return exp.table_(tokens[2].text, db=tokens[0].text)
        return exp.table_(tokens[0].text)

    def _parse_alter_drop_action(self) -> exp.Expression | None:
        after_drop = self._next.text.upper().split()[0] if self._next else ""
        if (
            self._curr
            and self._curr.text.upper() == "DROP"
            and after_drop
            in (
                *_KEYS_AND_CONSTRAINTS,
                "PERIOD",
                "SYSTEM",
            )
        ):
            self._advance()
            clause = self._no_column_change("DROP")
            words = clause.this.name.upper().replace("`", "").split()
            if words[-1] == "PRIMARY" or words[-2:] == ["PRIMARY", "KEY"]:  # DROP CONSTRAINT PRIMARY KEY, ...
                return self.expression(exp.DropPrimaryKey())
            return clause
        return super()._parse_alter_drop_action()

    def _add_primary_key(self) -> exp.Expression:
        """[CONSTRAINT [name]] PRIMARY KEY [IF NOT EXISTS] [name] [USING type] (col[(n)] [ASC|DESC], ...)
        [options]: an AddConstraint of a PrimaryKey naming the columns (meta `exists`: IF NOT EXISTS)."""
        while self._curr and self._curr.token_type != TokenType.PRIMARY_KEY and self._curr.text.upper() != "PRIMARY":
            self._advance()  # CONSTRAINT and its name
        if not self._match(TokenType.PRIMARY_KEY):
            self._match_text_seq("PRIMARY", "KEY")
        exists = self._parse_exists(not_=True)
        while self._curr and self._curr.token_type != TokenType.L_PAREN:
            self._advance()  # an index name, USING BTREE
        self._advance()
        columns, depth, expect_name = [], 1, True
        while self._curr and depth:
            kind = self._curr.token_type
            if depth == 1 and expect_name and kind not in (TokenType.COMMA, TokenType.R_PAREN):
                columns.append(exp.to_identifier(self._curr.text))
                expect_name = False
            elif depth == 1 and kind == TokenType.COMMA:
                expect_name = True
            depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(kind, 0)
            self._advance()
        self._no_column_change("PRIMARY KEY")  # index options up to the next clause
        added = self.expression(exp.AddConstraint(expressions=[exp.PrimaryKey(expressions=columns)]))
        added.meta["exists"] = bool(exists)  # sqlglot's AddConstraint has no such argument
        return added

    def _keys_or_constraint(self) -> bool:
        first = self._curr.text.upper().split()[0] if self._curr else ""  # FOREIGN KEY is one token
        return first in (*_KEYS_AND_CONSTRAINTS, "PRIMARY")

    def _primary_key_ahead(self) -> bool:
        """ADD [CONSTRAINT [name]] PRIMARY KEY ...: a change of the key."""
        index = self._index
        if self._match(TokenType.CONSTRAINT) and not self._primary_key_here():
            self._advance()  # the constraint's name
        ahead = self._primary_key_here()
        self._retreat(index)
        return ahead

    def _primary_key_here(self) -> bool:
        return bool(self._curr) and (
            self._curr.token_type == TokenType.PRIMARY_KEY or self._curr.text.upper() == "PRIMARY"
        )

    def _no_column_change(self, first: str) -> NoColumnChange:
        """Reads to the end of this clause (the next comma outside parentheses)."""
        words = [first]
        depth = 0
        while self._curr:
            kind = self._curr.token_type
            if depth == 0 and kind in (TokenType.COMMA, TokenType.SEMICOLON):
                break
            depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(kind, 0)
            words.append(self._curr.text)
            self._advance()
        return self.expression(NoColumnChange(this=exp.var(" ".join(words))))


class MariaDB(MySQL):
    """MySQL's dialect with MariaDB's and MySQL's table DDL that sqlglot lacks."""

    class Tokenizer(MySQL.Tokenizer):
        KEYWORDS = {**MySQL.Tokenizer.KEYWORDS, "REAL": TokenType.VAR, "LONG": TokenType.VAR}

    Parser = MariaDBParser
