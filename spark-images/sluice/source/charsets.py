"""MySQL's character sets as the reader needs them: how many bytes a character takes in
each, and the single-byte ones that Python has no codec for, decoded as the server decodes
them: each table is MariaDB's own `CONVERT(_<charset> 0x00..0xFF USING utf8mb4)`, one
character per byte ('?' where the server maps a byte to nothing, as a SELECT shows it).
tests/sluice/source/test_charsets.py holds them to the live server. Importing this module
registers them as Python codecs under their MySQL names."""

from __future__ import annotations

import codecs

# The most bytes a character takes in each of MariaDB's and MySQL's character sets: a table
# map gives string lengths in bytes, information_schema in characters, and a TEXT type holds
# bytes.
MBMAXLEN = {"big5": 2, "ujis": 3, "sjis": 2, "euckr": 2, "gb2312": 2, "gbk": 2, "gb18030": 4, "utf8": 3}
MBMAXLEN |= {"utf8mb3": 3, "ucs2": 2, "utf8mb4": 4, "utf16": 4, "utf16le": 4, "utf32": 4, "cp932": 2, "eucjpms": 3}
_SINGLE_BYTE = "dec8 cp850 hp8 koi8r latin1 latin2 swe7 ascii hebrew tis620 koi8u greek cp1250 latin5 armscii8"
_SINGLE_BYTE += " cp866 keybcs2 macce macroman cp852 latin7 cp1251 cp1256 cp1257 binary geostd8"
MBMAXLEN |= dict.fromkeys(_SINGLE_BYTE.split(), 1)

SERVER_TABLES = {
    "swe7": (
        "\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f"
        " !\"#$%&'()*+,-./0123456789:;<=>?"
        "ÉABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÅÜ_"
        "éabcdefghijklmnopqrstuvwxyzäöåü?"
        "????????????????????????????????"
        "????????????????????????????????"
        "????????????????????????????????"
        "????????????????????????????????"
    ),
    "dec8": (
        "\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f"
        " !\"#$%&'()*+,-./0123456789:;<=>?"
        "@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_"
        "`abcdefghijklmnopqrstuvwxyz{|}~\x7f"
        "\x80\x81\x82\x83\x84\x85\x86\x87\x88\x89\x8a\x8b\x8c\x8d\x8e\x8f\x90\x91\x92\x93\x94\x95\x96\x97\x98\x99\x9a\x9b\x9c\x9d\x9e\x9f"
        "\xa0¡¢£?¥?§¤©ª«????°±²³?µ¶·?¹º»¼½?¿"
        "ÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏ?ÑÒÓÔÕÖŒØÙÚÛÜŸ?ß"
        "àáâãäåæçèéêëìíîï?ñòóôõöœøùúûüÿ??"
    ),
    "hp8": (
        "\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f"
        " !\"#$%&'()*+,-./0123456789:;<=>?"
        "@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_"
        "`abcdefghijklmnopqrstuvwxyz{|}~\x7f"
        "\x80\x81\x82\x83\x84\x85\x86\x87\x88\x89\x8a\x8b\x8c\x8d\x8e\x8f\x90\x91\x92\x93\x94\x95\x96\x97\x98\x99\x9a\x9b\x9c\x9d\x9e\x9f"
        "\xa0ÀÂÈÊËÎÏ´ˋˆ¨˜ÙÛ₤¯Ýý°ÇçÑñ¡¿¤£¥§ƒ¢"
        "âêôûáéóúàèòùäëöüÅîØÆåíøæÄìÖÜÉïßÔ"
        "ÁÃãÐðÍÌÓÒÕõŠšÚŸÿÞþ·µ¶¾—¼½ªº«■»±?"
    ),
    "keybcs2": (
        "\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f"
        " !\"#$%&'()*+,-./0123456789:;<=>?"
        "@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_"
        "`abcdefghijklmnopqrstuvwxyz{|}~\x7f"
        "ČüéďäĎŤčěĚĹÍľĺÄÁÉžŽôöÓůÚýÖÜŠĽÝŘť"
        "áíóúňŇŮÔšřŕŔ¼¡«»░▒▓│┤╡╢╖╕╣║╗╝╜╛┐"
        "└┴┬├─┼╞╟╚╔╩╦╠═╬╧╨╤╥╙╘╒╓╫╪┘┌█▄▌▐▀"
        "αßΓπΣσµτΦΘΩδ∞φε∩≡±≥≤⌠⌡÷≈°∙·√ⁿ²■\xa0"
    ),
    "armscii8": (
        "\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f"
        " !\"#$%&'()*+,-./0123456789:;<=>?"
        "@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_"
        "`abcdefghijklmnopqrstuvwxyz{|}~\x7f"
        "\x80\x81\x82\x83\x84\x85\x86\x87\x88\x89\x8a\x8b\x8c\x8d\x8e\x8f\x90\x91\x92\x93\x94\x95\x96\x97\x98\x99\x9a\x9b\x9c\x9d\x9e\x9f"
        "\xa0❁§։)(»«—.՝,-՟…՜՛՞ԱաԲբԳգԴդԵեԶզԷէ"
        "ԸըԹթԺժԻիԼլԽխԾծԿկՀհՁձՂղՃճՄմՅյՆնՇշ"
        "ՈոՉչՊպՋջՌռՍսՎվՏտՐրՑցՒւՓփՔքՕօՖֆ’'"
    ),
    "geostd8": (
        "\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\x0b\x0c\r\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f"
        " !\"#$%&'()*+,-./0123456789:;<=>?"
        "@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_"
        "`abcdefghijklmnopqrstuvwxyz{|}~\x7f"
        "€?‚?„…†‡?‰?‹?????‘’“”•–—???›????"
        "\xa0¡¢£¤¥¦§¨©ª«¬\xad®¯°±²³´µ¶·¸¹º»¼½¾¿"
        "აბგდევზჱთიკლმნჲოპჟრსტჳუფქღყშჩცძწ"
        "ჭხჴჯჰჵ???????????????????????№??"
    ),
}


# MariaDB keeps UTF-16 surrogates in its UTF-8, UCS-2 and UTF-16 columns where a client
# wrote them (a legacy client's CESU-8 pairs, or lone ones), and sends them as they are:
# strings are read and written with them, so that a MySQL target gets the very bytes
# (sink/target_values has the rule for targets that hold only Unicode text).
SURROGATES = "surrogatepass"
_UNICODE_CODECS = {"utf-8", "utf-16-be", "utf-16-le", "utf-32-be"}
# The codec of every PyMySQL connection (`connection.encoding`): utf8mb4 with surrogates.
MYSQL_UTF8 = "mysql-utf8mb4"


def errors_of(codec: str) -> str:
    """The error handler a codec decodes MySQL's strings with."""
    return SURROGATES if codec in _UNICODE_CODECS else "strict"


class _SurrogatesEncoder(codecs.IncrementalEncoder):
    def encode(self, text: str, final: bool = False) -> bytes:
        return codecs.utf_8_encode(text, SURROGATES)[0]


class _SurrogatesDecoder(codecs.BufferedIncrementalDecoder):
    def _buffer_decode(self, raw: bytes, errors: str, final: bool) -> tuple[str, int]:  # type: ignore[override]
        return codecs.utf_8_decode(raw, SURROGATES, final)


def _search(name: str) -> codecs.CodecInfo | None:
    if name in (MYSQL_UTF8, MYSQL_UTF8.replace("-", "_")):  # as codecs normalizes it, or not
        return codecs.CodecInfo(
            name=MYSQL_UTF8,
            encode=lambda text, errors="strict": codecs.utf_8_encode(text, SURROGATES),
            decode=lambda raw, errors="strict": codecs.utf_8_decode(raw, SURROGATES, True),
            incrementalencoder=_SurrogatesEncoder,
            incrementaldecoder=_SurrogatesDecoder,
        )
    table = SERVER_TABLES.get(name)
    if table is None:
        return None
    encoding = codecs.charmap_build(table)
    return codecs.CodecInfo(
        name=name,
        encode=lambda text, errors="strict": codecs.charmap_encode(text, errors, encoding),
        decode=lambda raw, errors="strict": codecs.charmap_decode(raw, errors, table),
    )


codecs.register(_search)

# Character sets whose Python codec has another name (the rest share theirs, or have none),
# by MySQL's name or the encoding python-mysql-replication and PyMySQL give it.
_CODECS = {"ucs2": "utf-16-be", "utf16": "utf-16-be", "utf16le": "utf-16-le", "utf32": "utf-32-be"}
_CODECS |= {"utf8mb3": "utf-8", "utf8mb4": "utf-8", "ujis": "euc_jp", "eucjpms": "euc_jp", "sjis": "shift_jis"}
_CODECS |= {"euckr": "euc_kr", "greek": "iso8859_7", "hebrew": "iso8859_8", "latin2": "iso8859_2"}
_CODECS |= {"latin5": "iso8859_9", "latin7": "iso8859_13", "macce": "mac_latin2", "macroman": "mac_roman"}
_CODECS |= {"tis620": "tis_620", "koi8r": "koi8_r", "koi8u": "koi8_u", "latin1": "cp1252"}


def python_codec(charset: str) -> str:
    """The Python codec of a MySQL character set (MySQL's latin1 is cp1252); LookupError
    where Python has none."""
    return codecs.lookup(_CODECS.get(charset, charset)).name
